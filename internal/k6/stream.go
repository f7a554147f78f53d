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
	stop      atomic.Bool
	bufPool   sync.Pool
	keepPts   bool
	minT      atomic.Int64
	maxT      atomic.Int64
	firstVusT atomic.Int64
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

func loadPoints(name string, f Format, br *bufio.Reader, opts LoadOptions) (*Run, error) {
	statNames := opts.Stats
	if statNames == nil {
		statNames = DefaultStats
	}
	if _, err := parseStats(statNames); err != nil {
		return nil, err
	}
	sh := &shared{opts: &opts, keepPts: opts.KeepPoints}
	sh.reg = newRegistry(f, &opts)
	sh.minT.Store(math.MaxInt64)
	sh.maxT.Store(math.MinInt64)
	sh.firstVusT.Store(math.MaxInt64)
	if opts.Mode == ModeSketch {
		sh.sketch.Store(true)
	}
	sh.bufPool.New = func() any { b := make([]byte, chunkSize); return &b }
	line := 1
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
		line = 2
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}

	var readErr error
	var windowSet bool
	lowerD := max(opts.SkipWarmup, opts.From)
	windowed := lowerD > 0 || opts.To > 0
	var winStart int64
	sh.lower, sh.upper = math.MinInt64, math.MaxInt64

	// Reader: cut chunks at newlines, note Metric lines, hold back the first
	// chunks until the run's start is known when a window needs it.
	readAll := func(emit func(*chunk)) {
		defs := map[string]*MetricDef{}
		var carry []byte
		idx := 0
		var pending []*chunk
		pendingBytes := 0
		probe := sh.parser()
		var pw worker
		pw.sh = sh
		pw.p = probe
		pw.minT, pw.maxT, pw.vusT = math.MaxInt64, math.MinInt64, math.MaxInt64
		flush := func() {
			if !windowSet && windowed {
				start := runStart(pw.minT, pw.vusT)
				winStart = start
				sh.lower = start + int64(lowerD)
				if opts.To > 0 {
					sh.upper = start + int64(opts.To)
				}
			}
			windowSet = true
			for _, c := range pending {
				emit(c)
			}
			pending = nil
		}
		// Chunks start small (a small file costs little) and double up to
		// chunkSize; a line longer than a chunk grows its buffer.
		size := 64 << 10
		for !sh.stop.Load() {
			target := max(size, 2*len(carry))
			if target > maxLine {
				readErr = fmt.Errorf("%s:%d: line longer than %d MB", name, line, maxLine>>20)
				return
			}
			var bp *[]byte
			var b []byte
			if target == chunkSize {
				bp = sh.bufPool.Get().(*[]byte)
				b = (*bp)[:chunkSize]
			} else {
				b = make([]byte, target)
			}
			size = min(2*size, chunkSize)
			buf := append(b[:0], carry...)
			n, err := fill(br, b[len(buf):target])
			buf = b[:len(buf)+n]
			eof := err == io.EOF
			if err != nil && !eof {
				readErr = readError(name, err)
				return
			}
			cut := len(buf)
			if !eof {
				nl := bytes.LastIndexByte(buf, '\n')
				if nl < 0 {
					carry = append([]byte(nil), buf...)
					if bp != nil {
						sh.bufPool.Put(bp)
					}
					continue
				}
				cut = nl + 1
			}
			carry = append(carry[:0], buf[cut:]...)
			data := buf[:cut]
			if f == FormatNDJSON {
				defs = noteDefs(data, defs)
			}
			if len(data) > 0 {
				c := &chunk{idx: idx, data: data, firstLine: line, defs: defs, buf: bp}
				idx++
				line += bytes.Count(data, []byte{'\n'})
				if windowed && !windowSet {
					pending = append(pending, c)
					pendingBytes += len(data)
					pw.probeTimes(c)
					// Two seconds of data past the first sample show the
					// first vus tick (k6 samples vus every second).
					if pw.maxT-pw.minT > 2e9 || pendingBytes > 64<<20 {
						flush()
					}
				} else {
					emit(c)
				}
			}
			if eof {
				break
			}
		}
		flush()
	}

	newWorker := func() *worker {
		w := &worker{sh: sh, p: sh.parser(), cache: map[string]*seriesInfo{}, last: map[string]*lastSeries{}}
		w.raw.useMemo = true
		w.minT, w.maxT, w.vusT = math.MaxInt64, math.MinInt64, math.MaxInt64
		return w
	}
	// Collect in any order; keep trend chunks by index.
	var all []*chunkResult
	var firstErr *chunkResult
	skipped, lines := 0, 0
	col := &collector{sh: sh}
	collect := func(r *chunkResult) {
		skipped += r.skipped
		lines += r.lines
		if r.err != nil {
			if firstErr == nil || r.errLine < firstErr.errLine {
				firstErr = r
			}
			sh.stop.Store(true)
			return
		}
		col.add(r)
		for r.idx >= len(all) {
			all = append(all, nil)
		}
		all[r.idx] = r
	}
	workerList := make([]*worker, workers)
	for i := range workers {
		workerList[i] = newWorker()
	}
	release := func(c *chunk) {
		if c.buf != nil {
			sh.bufPool.Put(c.buf)
		}
	}
	if workers == 1 {
		// One worker: no goroutines at all (small inputs, fuzzing).
		w := workerList[0]
		readAll(func(c *chunk) {
			if !sh.stop.Load() {
				collect(w.run(c))
			}
			release(c)
		})
	} else {
		chunks := make(chan *chunk, workers*2)
		results := make(chan *chunkResult, workers*2)
		go func() {
			defer close(chunks)
			readAll(func(c *chunk) { chunks <- c })
		}()
		var wg sync.WaitGroup
		for _, w := range workerList {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := range chunks {
					if !sh.stop.Load() {
						results <- w.run(c)
					}
					release(c)
				}
			}()
		}
		go func() { wg.Wait(); close(results) }()
		for r := range results {
			collect(r)
		}
	}
	if firstErr != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, firstErr.errLine, firstErr.err)
	}
	if readErr != nil {
		return nil, readErr
	}
	if lines == 0 && skipped > 0 {
		return nil, fmt.Errorf("%s: no samples: all %d lines with data were bad and skipped", name, skipped)
	}
	if lines == 0 {
		return nil, fmt.Errorf("%s:%d: no samples (empty %s stream)", name, line, f)
	}
	run := &Run{Source: name, Format: f, Mode: ModeExact, Metrics: map[string]*Metric{}, Checks: map[string]Check{}, Skipped: skipped, GroupBy: opts.GroupBy}
	for _, w := range workerList {
		sh.minT.Store(min(sh.minT.Load(), w.minT))
		sh.maxT.Store(max(sh.maxT.Load(), w.maxT))
		sh.firstVusT.Store(min(sh.firstVusT.Load(), w.vusT))
	}
	if sh.minT.Load() == math.MaxInt64 {
		if skipped > 0 {
			return nil, fmt.Errorf("%s: no samples: all %d lines with data were bad and skipped", name, skipped)
		}
		return nil, fmt.Errorf("%s: no samples, only metric definitions", name)
	}
	start := runStart(sh.minT.Load(), sh.firstVusT.Load())
	end := sh.maxT.Load()
	if windowed {
		lo := winStart + int64(lowerD)
		hi := end
		if opts.To > 0 && winStart+int64(opts.To) < hi {
			hi = winStart + int64(opts.To)
		}
		if hi < lo {
			hi = lo
		}
		run.Start, run.End = time.Unix(0, lo).UTC(), time.Unix(0, hi).UTC()
	} else {
		run.Start, run.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
	}
	run.Duration = run.End.Sub(run.Start)
	if err := finish(run, sh, workerList, all, statNames, workers); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if sh.keepPts {
		n := 0
		for _, r := range all {
			if r != nil {
				n += len(r.points)
			}
		}
		run.Points = make([]Point, 0, n)
		for _, r := range all {
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
