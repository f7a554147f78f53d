package exporter

// Where NDJSON, CSV and API samples enter: lines are parsed and each
// sample goes to the sink (sink.go), which stores or refuses it.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/envelope-dev/envelope/internal/follow"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// IngestPoint ingests one k6 sample. Unknown metrics (no Metric line yet,
// not a k6 built-in) are counted as bad input and skipped.
func (s *Server) IngestPoint(p *k6.Point) {
	bp := s.bufPool.Get().(*[]byte)
	var ok bool
	*bp, ok = s.ingestPoint(SourceAPI, p, *bp)
	s.bufPool.Put(bp)
	if ok {
		s.accepted(SourceAPI, 1)
	}
}

// DefineMetric registers a k6 metric's type as an NDJSON Metric line does.
// A refused definition (invalid name, metric limit) is counted.
func (s *Server) DefineMetric(def *k6.MetricDef) {
	s.defineMetric(SourceAPI, def)
}

// A definition refused by the metric limit is not counted (it is not a
// sample): each of its samples is, as it arrives (ingestPoint).
func (s *Server) defineMetric(src string, def *k6.MetricDef) {
	k := sink{s: s, src: src}
	_, err := k.define(def.Name, def.Type, def.Contains)
	if err == nil {
		s.refused.forget(def.Name)
		return
	}
	if r := otlp.RefusalOf(err); r.Overflow && r.Reason == OverflowMetrics {
		s.refused.add(def.Name)
		return
	}
	s.refuse(src, otlp.RefusalOf(err), 1)
}

// ingestPoint applies one sample through the sink; false when it was
// refused (and counted).
func (s *Server) ingestPoint(src string, p *k6.Point, buf []byte) ([]byte, bool) {
	k := sink{s: s, src: src, pin: src == SourceResults}
	buf, err := k.sample(buf, p.Metric, p.Tags, p.Value)
	if err != nil {
		r := otlp.RefusalOf(err)
		if errors.Is(err, errUnknownMetric) && s.refused.has(p.Metric) {
			// Unknown because the metric limit refused its definition.
			r = otlp.Overflow(OverflowMetrics, fmt.Errorf("metric %q: its definition was refused, over the limit of %d k6 metrics", p.Metric, s.st.metricLimit))
		}
		s.refuse(src, r, 1)
		return buf, false
	}
	return buf, true
}

// lineIngester feeds NDJSON lines of one input through a k6.PointReader,
// counting bad lines and batching the self-metrics.
type lineIngester struct {
	s      *Server
	src    string
	live   bool
	buf    []byte
	r      k6.PointReader
	n      float64 // points not yet added to the self-metric
	total  int
	newest time.Time // the newest sample's k6 time
	// lag is the newest sample's ingest lag, taken as it was ingested:
	// a file left idle keeps the lag of its last sample.
	lag time.Duration
}

func (s *Server) newLineIngester(src, name string, live bool) *lineIngester {
	li := &lineIngester{s: s, src: src, live: live, buf: make([]byte, 0, 256)}
	li.r = k6.PointReader{
		Name: name,
		// A line longer than the read buffer: k6 never writes one.
		MaxLine: 64 << 10,
		OnPoint: li.point,
		OnMetric: func(def *k6.MetricDef) error {
			s.defineMetric(src, def)
			return nil
		},
		OnBad: li.bad,
	}
	return li
}

// line takes one line of live input; bad lines are counted, never fatal.
func (li *lineIngester) line(line []byte) { _ = li.r.Feed(line) }

func (li *lineIngester) bad(e *k6.LineError) error {
	reason := "malformed"
	if errors.Is(e, k6.ErrLineTooLong) {
		reason = "line_too_long"
	}
	li.s.refuse(li.src, otlp.Refuse(reason, fmt.Errorf("%s: line %d: %w", e.File, e.Line, e.Err)), 1)
	return nil
}

func (li *lineIngester) point(p *k6.Point) error {
	var ok bool
	li.buf, ok = li.s.ingestPoint(li.src, p, li.buf)
	li.total++
	if !ok {
		return nil
	}
	li.n++
	if p.Time.After(li.newest) {
		li.newest = p.Time
		if li.live {
			li.lag = ingestLag(li.s.st.now(), p.Time)
		}
	}
	if li.n >= 4096 {
		li.flush()
	}
	return nil
}

// flush publishes batched self-metrics.
func (li *lineIngester) flush() {
	if li.n > 0 {
		li.s.accepted(li.src, int(li.n))
		li.n = 0
	}
	if !li.newest.IsZero() {
		li.s.lastTS.WithLabelValues(li.src).Set(float64(li.newest.UnixNano()) / 1e9)
		if li.live {
			li.s.lag.WithLabelValues(li.src).Set(li.lag.Seconds())
		}
	}
}

// ReplayFile ingests a finished k6 result file: NDJSON (plain or .gz,
// streamed line by line in constant memory) or CSV (loaded whole by
// internal/k6), told apart by content. Bad lines are counted and skipped.
// It returns the number of samples ingested; a file that yields none (a
// summary JSON, an empty file, something that is not k6 output) is an
// error, so a wrong path is not mistaken for a replayed run.
func (s *Server) ReplayFile(path string) (int, error) {
	in, err := k6.OpenInput(path)
	if err != nil {
		return 0, err
	}
	defer in.Close() //nolint:errcheck // only read
	var n int
	if head, _ := in.Peek(len("metric_name,")); string(head) == "metric_name," {
		n, err = s.replayCSV(in)
	} else {
		n, err = s.ingestLines(in, SourceResults, false)
	}
	if err != nil {
		return n, err
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no k6 samples: want k6 --out json (NDJSON, plain or .gz) or --out csv output; summary files hold no samples to replay", path)
	}
	return n, nil
}

// replayCSV ingests a CSV result, which internal/k6 loads whole.
func (s *Server) replayCSV(in *k6.Input) (int, error) {
	run, err := k6.LoadReader(in.Name, in, k6.LoadOptions{KeepPoints: true, Lenient: true})
	if err != nil {
		return 0, err
	}
	// CSV carries no Metric lines: custom metrics take the type the
	// loader gave them (a trend unless a built-in), as summarize shows.
	for name, m := range run.Metrics {
		if m.Parent != name {
			continue
		}
		if _, err := s.st.lookup(name); err != nil {
			s.defineMetric(SourceResults, &k6.MetricDef{Name: name, Type: m.Type, Contains: m.Contains})
		}
	}
	buf := make([]byte, 0, 256)
	kept := 0
	for i := range run.Points {
		var ok bool
		if buf, ok = s.ingestPoint(SourceResults, &run.Points[i], buf); ok {
			kept++
		}
	}
	s.accepted(SourceResults, kept)
	return len(run.Points), nil
}

func (s *Server) ingestLines(in *k6.Input, src string, live bool) (int, error) {
	li := s.newLineIngester(src, in.Name, live)
	err := li.r.Read(in)
	li.flush()
	return li.total, err
}

// Follow tails a growing k6 NDJSON file as `tail -F` does, through
// truncation and rotation, waiting for it while it does not exist; "-"
// reads stdin. It returns when ctx ends (nil) or stdin closes.
func (s *Server) Follow(ctx context.Context, path string) error {
	li := s.newLineIngester(SourceNDJSON, path, true)
	flushT := time.NewTicker(time.Second)
	defer flushT.Stop()
	var mu sync.Mutex
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-flushT.C:
				mu.Lock()
				li.flush()
				mu.Unlock()
			case <-done:
				return
			}
		}
	}()
	opts := follow.Options{
		Poll: s.cfg.FollowPoll,
		OnReopen: func(reason string) {
			s.reopens.Inc()
			s.log.Info("reopened followed file", "file", path, "reason", reason)
		},
		OnWait: func() { s.log.Info("waiting for file to appear", "file", path) },
	}
	err := follow.Lines(ctx, path, opts, func(line []byte) {
		mu.Lock()
		li.line(line)
		mu.Unlock()
	})
	mu.Lock()
	li.flush()
	mu.Unlock()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
