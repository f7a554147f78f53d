package exporter

import (
	"github.com/envelope-dev/envelope/internal/k6"
)

// otlpSink adapts the Server to otlp.Sink: the receiver turns cumulative
// OTLP points into deltas and hands them over here.
type otlpSink Server

func (o *otlpSink) srv() *Server { return (*Server)(o) }

func (o *otlpSink) Define(name string, typ k6.MetricType, contains k6.ValueType) bool {
	f := o.st.define(name, typ, contains)
	// A metric seen first in NDJSON keeps its type; refuse a mismatch.
	return f.typ == typ
}

func (o *otlpSink) series(name string, tags map[string]string) (*family, *series) {
	f, err := o.st.lookup(name)
	if err != nil {
		return nil, nil
	}
	bp := o.bufPool.Get().(*[]byte)
	s, b := o.st.get(f, *bp, tags)
	*bp = b
	o.bufPool.Put(bp)
	return f, s
}

func (o *otlpSink) AddCounter(name string, tags map[string]string, delta float64) {
	if delta < 0 {
		return // a counter never goes down; the receiver rejects these already
	}
	if _, s := o.series(name, tags); s != nil {
		s.addFloat(delta)
	}
}

func (o *otlpSink) SetGauge(name string, tags map[string]string, v float64) {
	f, s := o.series(name, tags)
	if s != nil {
		o.st.sample(f, s, v)
	}
}

func (o *otlpSink) AddRate(name string, tags map[string]string, zero, nonzero uint64) {
	if _, s := o.series(name, tags); s != nil {
		s.zero.Add(zero)
		s.nonzero.Add(nonzero)
	}
}

func (o *otlpSink) AddBuckets(name string, tags map[string]string, values []float64, counts []uint64, sum float64) {
	f, s := o.series(name, tags)
	if s == nil || s.h == nil {
		return
	}
	// Representative values carry the counts; the sum is exact.
	for i, v := range values {
		if counts[i] == 0 {
			continue
		}
		x := v * f.scale
		s.h.observe(x, counts[i], 0)
	}
	s.h.mu.Lock()
	s.h.sum += sum * f.scale
	s.h.mu.Unlock()
}

func (o *otlpSink) Ingested(n int, newest int64) {
	srv := o.srv()
	srv.points.WithLabelValues(SourceOTLP).Add(float64(n))
	if newest > 0 {
		srv.lastTS.WithLabelValues(SourceOTLP).Set(float64(newest) / 1e9)
		srv.lag.WithLabelValues(SourceOTLP).Set(max(float64(srv.st.now().UnixNano()-newest)/1e9, 0))
	}
}
