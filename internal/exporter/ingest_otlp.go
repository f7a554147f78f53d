package exporter

// Where OTLP samples enter the store: the receiver's Sink.

import (
	"fmt"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// otlpSink adapts the Server to otlp.Sink: the receiver turns cumulative
// OTLP points into deltas and hands them over here. Errors refuse the
// point: the receiver reports them in partial_success and hands each
// refusal back to Refuse, which counts it.
type otlpSink Server

func (o *otlpSink) srv() *Server { return (*Server)(o) }

func (o *otlpSink) Define(name string, typ k6.MetricType, contains k6.ValueType) error {
	f, err := o.st.define(name, typ, contains)
	if err != nil {
		return refusalOf(err)
	}
	// A metric seen first in NDJSON keeps its type; refuse a mismatch.
	if f.typ != typ {
		return otlp.Refuse("type_conflict", fmt.Errorf("already defined as a %s, not a %s", f.typ, typ))
	}
	return nil
}

// series finds the series of a point; a repaired label value is counted
// at once (the point is taken).
func (o *otlpSink) series(name string, tags map[string]string) (*family, *series, error) {
	bp := o.bufPool.Get().(*[]byte)
	f, s, b, fixed, err := o.st.seriesFor(name, *bp, tags, false)
	*bp = b
	o.bufPool.Put(bp)
	if fixed {
		o.srv().refuse(SourceOTLP, otlp.Refuse("invalid_utf8", fmt.Errorf("metric %q: tag values not valid UTF-8, replaced", name)), 1)
	}
	if err != nil {
		return f, nil, refusalOf(err)
	}
	return f, s, nil
}

// refuseOverflow refuses a point that would make a figure infinite or wrap a
// count.
func (o *otlpSink) refuseOverflow(name string) error {
	return otlp.Refuse("overflow", fmt.Errorf("metric %q: %w", name, errOverflow))
}

func (o *otlpSink) AddCounter(name string, tags map[string]string, delta float64) error {
	if delta < 0 {
		return fmt.Errorf("negative counter increment %v", delta) // the receiver rejects these already
	}
	_, s, err := o.series(name, tags)
	if err != nil {
		return err
	}
	if !s.addFloat(delta) {
		return o.refuseOverflow(name)
	}
	return nil
}

func (o *otlpSink) SetGauge(name string, tags map[string]string, v float64) error {
	f, s, err := o.series(name, tags)
	if err != nil {
		return err
	}
	if o.st.sample(f, s, v) != nil {
		return o.refuseOverflow(name)
	}
	return nil
}

func (o *otlpSink) AddRate(name string, tags map[string]string, zero, nonzero uint64) error {
	_, s, err := o.series(name, tags)
	if err != nil {
		return err
	}
	if s.zero.Load()+zero < s.zero.Load() || s.nonzero.Load()+nonzero < s.nonzero.Load() {
		return o.refuseOverflow(name)
	}
	if !addCount(&s.zero, zero) || !addCount(&s.nonzero, nonzero) {
		return o.refuseOverflow(name)
	}
	return nil
}

func (o *otlpSink) AddBuckets(name string, tags map[string]string, values []float64, counts []uint64, sum float64) error {
	f, s, err := o.series(name, tags)
	if err != nil {
		return err
	}
	if s.h == nil {
		return fmt.Errorf("metric %q is not a trend", name)
	}
	// Representative values carry the counts; the sum is exact.
	scaled := make([]float64, len(values))
	for i, v := range values {
		scaled[i] = v * f.scale
	}
	if !s.h.observeAll(scaled, counts, sum*f.scale) {
		return o.refuseOverflow(name)
	}
	return nil
}

func (o *otlpSink) Refuse(r *otlp.Refusal, points int) { o.srv().refuse(SourceOTLP, r, points) }

func (o *otlpSink) Ingested(n int, newest int64) {
	srv := o.srv()
	srv.accepted(SourceOTLP, n)
	if newest > 0 {
		srv.lastTS.WithLabelValues(SourceOTLP).Set(float64(newest) / 1e9)
		srv.lag.WithLabelValues(SourceOTLP).Set(max(float64(srv.st.now().UnixNano()-newest)/1e9, 0))
	}
}
