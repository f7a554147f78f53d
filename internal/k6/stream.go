package k6

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/envelope-dev/envelope/internal/stats"
)

// Point streams (NDJSON, CSV) are read in chunks of whole lines by one
// goroutine and parsed by GOMAXPROCS workers. Counters, rates and gauges
// are folded per series as they come; trend samples are kept per chunk in
// file order (8 bytes each, plus a 2-byte class id when the metric has
// sub-metrics or groups), because k6's avg is a plain running sum in
// arrival order and only the same order gives the same last digits.

const (
	chunkSize = 1 << 20
	maxLine   = 256 << 20
)

type chunk struct {
	idx       int
	data      []byte
	firstLine int
	defs      map[string]*MetricDef // Metric lines seen up to this chunk
	buf       *[]byte               // pooled backing array
}

// ordered is one chunk's trend samples of one metric, in file order.
type ordered struct {
	vals []float64
	cls  []uint16
}

type chunkResult struct {
	idx     int
	trends  []*ordered // by metric idx
	points  []Point
	err     error
	errLine int
	skipped int
	lines   int
}

// seriesAgg folds a counter, rate or gauge series.
type seriesAgg struct {
	n        int64   // samples
	sum      float64 // counter: sum of values
	nonzero  int64   // rate: non-zero samples
	min, max float64
	last     float64
	lastLine int
}

// lastSeries remembers a metric's previous tag set and its series.
type lastSeries struct {
	tags []byte
	s    *seriesInfo
}

// lineParser parses one line into the worker's view of it.
type lineParser interface {
	// parse fills w.cur (time, value) and w.key (series key), returning
	// the metric name bytes; skip reports a blank line.
	parse(w *worker, line []byte) (metric []byte, skip bool, err error)
	// decodeTags fills tags of the line just parsed (new series only).
	decodeTags(w *worker, tags map[string]string) error
	// metadata returns the line's metadata (KeepPoints only).
	metadata(w *worker) (map[string]string, error)
}

type shared struct {
	reg       *registry
	opts      *LoadOptions
	parser    func() lineParser
	lower     int64 // window in unix ns; math.MinInt64/MaxInt64 when open
	upper     int64
	sketch    atomic.Bool
	held      atomic.Int64 // bytes of exact trend samples held
	stop      atomic.Bool  // stop reading: a chunk failed
	errIdx    atomic.Int64 // the first failed chunk's index; later chunks are skipped
	bufPool   sync.Pool
	keepPts   bool
	minT      atomic.Int64
	maxT      atomic.Int64
	firstVusT atomic.Int64
	iterT     atomic.Int64
	// fingerprints: trend views get their Fingerprint, which tells a
	// group of the same samples as a trend apart; only groups need it.
	fingerprints bool
}

type worker struct {
	sh       *shared
	p        lineParser
	cache    map[string]*seriesInfo
	last     map[string]*lastSeries // by metric name
	tagBytes []byte                 // the line's tag set as written
	keyBuilt bool                   // the parser built key itself
	aggs     []seriesAgg
	sketches [][]*stats.Sketch // by metric idx, class
	fps      [][]uint64        // trend fingerprints by metric idx, class
	bins     [][]*binner       // trend samples by time, by metric idx, class
	iterT    int64             // the earliest iteration start: sample time less iteration_duration
	key      []byte
	curT     int64
	curOff   int
	curV     float64
	minT     int64
	maxT     int64
	vusT     int64
	scratch  []*ordered
	raw      rawLine
}

// pointLoad is one point stream being summarized: a reader cuts chunks of
// whole lines, workers parse them, and their results are collected in
// file order.
type pointLoad struct {
	name    string
	f       Format
	br      *bufio.Reader
	opts    *LoadOptions
	stats   []string
	sh      *shared
	workers []*worker
	line    int // the reader's next line number

	lowerD    time.Duration // the window's lower bound after the run start
	windowed  bool
	windowSet bool
	winStart  int64
	readErr   error

	all      []*chunkResult // by chunk index
	firstErr *chunkResult
	skipped  int
	lines    int
	col      *collector
}

func loadPoints(name string, f Format, br *bufio.Reader, opts LoadOptions) (*Run, error) {
	l, err := newPointLoad(name, f, br, &opts)
	if err != nil {
		return nil, err
	}
	l.dispatch()
	if err := l.inputError(); err != nil {
		return nil, err
	}
	return l.result()
}

func newPointLoad(name string, f Format, br *bufio.Reader, opts *LoadOptions) (*pointLoad, error) {
	l := &pointLoad{name: name, f: f, br: br, opts: opts, stats: opts.Stats, line: 1}
	if l.stats == nil {
		l.stats = DefaultStats()
	}
	if _, err := parseStats(l.stats); err != nil {
		return nil, err
	}
	sh := &shared{opts: opts, keepPts: opts.KeepPoints, fingerprints: opts.GroupBy != ""}
	sh.errIdx.Store(math.MaxInt64)
	l.sh = sh
	sh.reg = newRegistry(f, opts)
	sh.minT.Store(math.MaxInt64)
	sh.maxT.Store(math.MinInt64)
	sh.firstVusT.Store(math.MaxInt64)
	sh.iterT.Store(math.MaxInt64)
	if opts.Mode == ModeSketch {
		sh.sketch.Store(true)
	}
	sh.bufPool.New = func() any { b := make([]byte, chunkSize); return &b }
	switch f {
	case FormatNDJSON:
		sh.parser = func() lineParser { return &ndjsonParser{} }
	case FormatCSV:
		hdr, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, readError(name, err)
		}
		cp, err := newCSVParser(trimEOL(hdr))
		if err != nil {
			return nil, fmt.Errorf("%s:1: %v", name, err)
		}
		sh.parser = func() lineParser { c := *cp; return &c }
		l.line = 2
	}
	n := opts.Workers
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	l.workers = make([]*worker, n)
	for i := range n {
		w := &worker{sh: sh, p: sh.parser(), cache: map[string]*seriesInfo{}, last: map[string]*lastSeries{}}
		w.raw.useMemo = true
		w.minT, w.maxT, w.vusT, w.iterT = math.MaxInt64, math.MinInt64, math.MaxInt64, math.MaxInt64
		l.workers[i] = w
	}
	l.lowerD = max(opts.SkipWarmup, opts.From)
	l.windowed = l.lowerD > 0 || opts.To > 0
	sh.lower, sh.upper = math.MinInt64, math.MaxInt64
	l.col = &collector{sh: sh}
	return l, nil
}

// chunkReader cuts the input into chunks at newlines, notes Metric lines,
// and holds back the first chunks until the run's start is known when a
// window needs it.
type chunkReader struct {
	l            *pointLoad
	defs         map[string]*MetricDef
	carry        []byte
	idx          int
	size         int // the next chunk's size
	pending      []*chunk
	pendingBytes int
	probe        worker // notes sample times of held-back chunks
}

// readAll emits the input's chunks in file order.
func (l *pointLoad) readAll(emit func(*chunk)) {
	// Chunks start small (a small file costs little) and double up to
	// chunkSize; a line longer than a chunk grows its buffer.
	cr := &chunkReader{l: l, defs: map[string]*MetricDef{}, size: 64 << 10}
	cr.probe.sh = l.sh
	cr.probe.p = l.sh.parser()
	cr.probe.minT, cr.probe.maxT, cr.probe.vusT = math.MaxInt64, math.MinInt64, math.MaxInt64
	for !l.sh.stop.Load() {
		c, eof, err := cr.next()
		if err != nil {
			l.readErr = err
			return
		}
		if c != nil {
			cr.route(c, emit)
		}
		if eof {
			break
		}
	}
	cr.flush(emit)
}

// next reads the next chunk: nil while a line is still incomplete or when
// the input ends without data.
func (cr *chunkReader) next() (c *chunk, eof bool, err error) {
	l, sh := cr.l, cr.l.sh
	target := max(cr.size, 2*len(cr.carry))
	if target > maxLine {
		return nil, false, fmt.Errorf("%s:%d: line longer than %d MB", l.name, l.line, maxLine>>20)
	}
	var bp *[]byte
	var b []byte
	if target == chunkSize {
		bp = sh.bufPool.Get().(*[]byte)
		b = (*bp)[:chunkSize]
	} else {
		b = make([]byte, target)
	}
	cr.size = min(2*cr.size, chunkSize)
	buf := append(b[:0], cr.carry...)
	n, err := fill(l.br, b[len(buf):target])
	buf = b[:len(buf)+n]
	eof = err == io.EOF
	if err != nil && !eof {
		return nil, false, readError(l.name, err)
	}
	cut := len(buf)
	if !eof {
		nl := bytes.LastIndexByte(buf, '\n')
		if nl < 0 {
			cr.carry = append([]byte(nil), buf...)
			if bp != nil {
				sh.bufPool.Put(bp)
			}
			return nil, false, nil
		}
		cut = nl + 1
	}
	cr.carry = append(cr.carry[:0], buf[cut:]...)
	data := buf[:cut]
	if l.f == FormatNDJSON {
		cr.defs = noteDefs(data, cr.defs)
	}
	if len(data) == 0 {
		return nil, eof, nil
	}
	c = &chunk{idx: cr.idx, data: data, firstLine: l.line, defs: cr.defs, buf: bp}
	cr.idx++
	l.line += bytes.Count(data, []byte{'\n'})
	return c, eof, nil
}

// route emits c, or holds it back until the window's start is known.
func (cr *chunkReader) route(c *chunk, emit func(*chunk)) {
	l := cr.l
	if !l.windowed || l.windowSet {
		emit(c)
		return
	}
	cr.pending = append(cr.pending, c)
	cr.pendingBytes += len(c.data)
	cr.probe.probeTimes(c)
	// Two seconds of data past the first sample show the first vus tick
	// (k6 samples vus every second).
	if cr.probe.maxT-cr.probe.minT > 2e9 || cr.pendingBytes > 64<<20 {
		cr.flush(emit)
	}
}

// flush sets the window from the held-back chunks and emits them.
func (cr *chunkReader) flush(emit func(*chunk)) {
	l := cr.l
	if !l.windowSet && l.windowed {
		l.setWindow(runStart(cr.probe.minT, cr.probe.vusT))
	}
	l.windowSet = true
	for _, c := range cr.pending {
		emit(c)
	}
	cr.pending = nil
}

// dispatch runs the reader and the workers until the input ends or a
// worker fails.
func (l *pointLoad) dispatch() {
	sh := l.sh
	release := func(c *chunk) {
		if c.buf != nil {
			sh.bufPool.Put(c.buf)
		}
	}
	if len(l.workers) == 1 {
		// One worker: no goroutines at all (small inputs, fuzzing).
		w := l.workers[0]
		l.readAll(func(c *chunk) {
			if int64(c.idx) < sh.errIdx.Load() {
				l.collect(w.run(c))
			}
			release(c)
		})
		return
	}
	chunks := make(chan *chunk, len(l.workers)*2)
	results := make(chan *chunkResult, len(l.workers)*2)
	go func() {
		defer close(chunks)
		l.readAll(func(c *chunk) { chunks <- c })
	}()
	var wg sync.WaitGroup
	for _, w := range l.workers {
		wg.Go(func() {
			for c := range chunks {
				// Chunks before a failed one are still parsed: one of
				// them may hold an earlier bad line, the one to report.
				if int64(c.idx) < sh.errIdx.Load() {
					results <- w.run(c)
				}
				release(c)
			}
		})
	}
	go func() { wg.Wait(); close(results) }()
	for r := range results {
		l.collect(r)
	}
}

// collect takes results in any order and keeps them by chunk index.
func (l *pointLoad) collect(r *chunkResult) {
	l.skipped += r.skipped
	l.lines += r.lines
	if r.err != nil {
		if l.firstErr == nil || r.errLine < l.firstErr.errLine {
			l.firstErr = r
		}
		for {
			cur := l.sh.errIdx.Load()
			if int64(r.idx) >= cur || l.sh.errIdx.CompareAndSwap(cur, int64(r.idx)) {
				break
			}
		}
		l.sh.stop.Store(true)
		return
	}
	l.col.add(r)
	for r.idx >= len(l.all) {
		l.all = append(l.all, nil)
	}
	l.all[r.idx] = r
}

// inputError reports the first bad line, a read error, or an input
// without samples.
func (l *pointLoad) inputError() error {
	if l.firstErr != nil {
		return fmt.Errorf("%s:%d: %v", l.name, l.firstErr.errLine, l.firstErr.err)
	}
	if l.readErr != nil {
		return l.readErr
	}
	if l.lines == 0 && l.skipped > 0 {
		return fmt.Errorf("%s: no samples: all %d lines with data were bad and skipped", l.name, l.skipped)
	}
	if l.lines == 0 {
		return fmt.Errorf("%s:%d: no samples (empty %s stream)", l.name, l.line, l.f)
	}
	return nil
}

// result computes the run from the collected chunks.
func (l *pointLoad) result() (*Run, error) {
	sh := l.sh
	run := &Run{Source: l.name, Format: l.f, Mode: ModeExact, Metrics: map[string]*Metric{}, Checks: map[string]Check{}, Skipped: l.skipped, GroupBy: l.opts.GroupBy}
	for _, w := range l.workers {
		sh.minT.Store(min(sh.minT.Load(), w.minT))
		sh.maxT.Store(max(sh.maxT.Load(), w.maxT))
		sh.firstVusT.Store(min(sh.firstVusT.Load(), w.vusT))
		sh.iterT.Store(min(sh.iterT.Load(), w.iterT))
	}
	if sh.minT.Load() == math.MaxInt64 {
		if l.skipped > 0 {
			return nil, fmt.Errorf("%s: no samples: all %d lines with data were bad and skipped", l.name, l.skipped)
		}
		return nil, fmt.Errorf("%s: no samples, only metric definitions", l.name)
	}
	l.setBounds(run)
	bins := foldBinners(l.workers)
	if err := finish(run, sh, l.workers, l.all, bins, l.stats, len(l.workers)); err != nil {
		return nil, fmt.Errorf("%s: %v", l.name, err)
	}
	run.TagValues = sh.reg.tagValues()
	if l.opts.Timeline {
		run.Timeline = timelineOf(sh.reg.metrics[HTTPReqDuration], sh.reg.metrics[HTTPReqFailed], bins)
	}
	if sh.keepPts {
		n := 0
		for _, r := range l.all {
			if r != nil {
				n += len(r.points)
			}
		}
		run.Points = make([]Point, 0, n)
		for _, r := range l.all {
			if r != nil {
				run.Points = append(run.Points, r.points...)
			}
		}
	}
	return run, nil
}

// probeTimes notes the times of a chunk's samples without aggregating.
func (w *worker) probeTimes(c *chunk) {
	forLines(c.data, func(line []byte) bool {
		metric, skip, err := w.p.parse(w, line)
		if err == nil && !skip && metric != nil {
			w.noteTime(metric)
		}
		return true
	})
}

func (w *worker) noteTime(metric []byte) {
	if w.curT < w.minT {
		w.minT = w.curT
	}
	if w.curT > w.maxT {
		w.maxT = w.curT
	}
	if w.curT < w.vusT && string(metric) == "vus" {
		w.vusT = w.curT
	}
}

// forLines calls fn for each line of data (without its newline).
func forLines(data []byte, fn func([]byte) bool) {
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		var line []byte
		if nl < 0 {
			line, data = data, nil
		} else {
			line, data = data[:nl], data[nl+1:]
		}
		if !fn(line) {
			return
		}
	}
}

func (w *worker) run(c *chunk) *chunkResult {
	sh := w.sh
	res := &chunkResult{idx: c.idx}
	sketch := sh.sketch.Load()
	for _, o := range w.scratch {
		if o != nil {
			o.vals, o.cls = o.vals[:0], o.cls[:0]
		}
	}
	lineNo := c.firstLine
	data := c.data
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		var line []byte
		if nl < 0 {
			line, data = data, nil
		} else {
			line, data = data[:nl], data[nl+1:]
		}
		ln := lineNo
		lineNo++
		metric, skip, err := w.p.parse(w, line)
		if skip {
			continue
		}
		if err == nil {
			err = w.add(c, res, metric, ln, sketch)
		}
		if err != nil {
			if sh.opts.Lenient {
				res.skipped++
				continue
			}
			res.err, res.errLine = err, ln
			return res
		}
		res.lines++
	}
	// Copy this chunk's trend samples out at their exact size.
	for i, o := range w.scratch {
		if o == nil || len(o.vals) == 0 {
			continue
		}
		for len(res.trends) <= i {
			res.trends = append(res.trends, nil)
		}
		out := &ordered{vals: append([]float64(nil), o.vals...)}
		if o.cls != nil {
			out.cls = append([]uint16(nil), o.cls...)
		}
		res.trends[i] = out
	}
	return res
}

func (w *worker) add(c *chunk, res *chunkResult, metric []byte, ln int, sketch bool) error {
	if metric == nil { // a Metric line
		return nil
	}
	w.noteTime(metric)
	if w.curT < w.sh.lower || w.curT >= w.sh.upper {
		return nil
	}
	// Most lines repeat the tag set of their metric's previous line: one
	// short hash and one comparison find the series.
	var s *seriesInfo
	last := w.last[string(metric)]
	if last != nil && bytes.Equal(last.tags, w.tagBytes) {
		s = last.s
	} else {
		if !w.keyBuilt {
			w.key = append(append(append(w.key[:0], metric...), 0), w.tagBytes...)
		}
		var ok bool
		s, ok = w.cache[string(w.key)]
		if !ok {
			var err error
			s, err = w.sh.reg.get(string(w.key), string(metric), c.defs, func(tags map[string]string) error {
				return w.p.decodeTags(w, tags)
			})
			if err != nil {
				return err
			}
			w.cache[string(w.key)] = s
		}
		if last == nil {
			last = &lastSeries{}
			w.last[string(metric)] = last
		}
		last.tags = append(last.tags[:0], w.tagBytes...)
		last.s = s
	}
	v := w.curV
	m := s.metric
	if m.typ == Trend {
		if w.sh.fingerprints {
			for len(w.fps) <= m.idx {
				w.fps = append(w.fps, nil)
			}
			for len(w.fps[m.idx]) <= int(s.class) {
				w.fps[m.idx] = append(w.fps[m.idx], 0)
			}
			w.fps[m.idx][s.class] = fingerprint(w.fps[m.idx][s.class], v)
		}
		if m.binned {
			w.binnerOf(m, s.class).add(w.curT, v)
		}
		if m.iterations {
			if t := w.curT - int64(v*1e6); t < w.iterT {
				w.iterT = t
			}
		}
		if sketch {
			for len(w.sketches) <= m.idx {
				w.sketches = append(w.sketches, nil)
			}
			row := w.sketches[m.idx]
			for len(row) <= int(s.class) {
				row = append(row, nil)
			}
			if row[s.class] == nil {
				row[s.class] = &stats.Sketch{}
			}
			row[s.class].Add(v)
			w.sketches[m.idx] = row
		} else {
			for len(w.scratch) <= m.idx {
				w.scratch = append(w.scratch, nil)
			}
			o := w.scratch[m.idx]
			if o == nil {
				o = &ordered{}
				if m.needsCls {
					o.cls = []uint16{}
				}
				w.scratch[m.idx] = o
			}
			o.vals = append(o.vals, v)
			if o.cls != nil {
				o.cls = append(o.cls, s.class)
			}
		}
	} else {
		if m.timeline {
			w.binnerOf(m, s.class).add(w.curT, v)
		}
		for len(w.aggs) <= s.id {
			w.aggs = append(w.aggs, seriesAgg{})
		}
		a := &w.aggs[s.id]
		if a.n == 0 || v < a.min {
			a.min = v
		}
		if a.n == 0 || v > a.max {
			a.max = v
		}
		a.n++
		a.sum += v
		if v != 0 {
			a.nonzero++
		}
		if ln >= a.lastLine {
			a.last, a.lastLine = v, ln
		}
	}
	if w.sh.keepPts {
		md, err := w.p.metadata(w)
		if err != nil {
			return err
		}
		res.points = append(res.points, Point{Metric: m.name, Time: unixTime(w.curT, w.curOff), Value: v, Tags: s.tags, Metadata: md})
	}
	return nil
}

// fill reads until b is full or the reader stops. Unlike io.ReadFull it
// returns io.EOF only for a clean end of input, so a stream error that is
// itself io.ErrUnexpectedEOF (a truncated gzip member) is reported as a
// read error instead of being taken for the end of the file.
func fill(r io.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
