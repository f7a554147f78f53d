package exporter

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// sink is where every sample is stored or refused, whatever its input:
// NDJSON followed or replayed, CSV, IngestPoint (sample), and OTLP/HTTP
// and OTLP/gRPC through the receiver, whose otlp.Sink it is (the
// receiver turns cumulative points into increments first). Each method
// stores the sample or returns a typed refusal (*otlp.Refusal); every
// refusal is counted once, by Server.refuse (the OTLP receiver hands
// them back to Refuse), and stored points by Server.accepted.
type sink struct {
	s   *Server
	src string // the source label of its counts
	pin bool   // replayed results: their runs have no TTL
}

// series finds the series of a sample; a repaired label value is counted
// at once (the sample is taken). buf holds the series key.
func (k *sink) series(buf []byte, name string, tags map[string]string) (*family, *series, []byte, error) {
	f, ser, buf, fixed, err := k.s.st.seriesFor(name, buf, tags, k.pin)
	if fixed {
		k.s.refuse(k.src, otlp.Refuse("invalid_utf8", fmt.Errorf("metric %q: tag values not valid UTF-8, replaced", name)), 1)
	}
	if err != nil {
		r := refusalOf(err)
		return f, nil, buf, &otlp.Refusal{Reason: r.Reason, Overflow: r.Overflow,
			Err: fmt.Errorf("metric %q: %w", strings.ToValidUTF8(name, "\uFFFD"), err)}
	}
	return f, ser, buf, nil
}

// pooled is series with a key buffer from the Server's pool.
func (k *sink) pooled(name string, tags map[string]string) (*family, *series, error) {
	bp := k.s.bufPool.Get().(*[]byte)
	f, ser, b, err := k.series(*bp, name, tags)
	*bp = b
	k.s.bufPool.Put(bp)
	return f, ser, err
}

// sample applies one k6 sample (NDJSON, CSV, IngestPoint): a counter
// increment, a gauge value, a rate sample or a trend observation.
func (k *sink) sample(buf []byte, name string, tags map[string]string, v float64) ([]byte, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		// One NaN would turn a histogram's sum into NaN for good.
		return buf, otlp.Refuse("bad_value", fmt.Errorf("metric %q: value %v", name, v))
	}
	f, ser, buf, err := k.series(buf, name, tags)
	if err != nil {
		return buf, err
	}
	if f.typ == k6.Counter && v < 0 {
		// A Prometheus counter never goes down; a negative increment
		// would read as a counter reset.
		return buf, otlp.Refuse("bad_value", fmt.Errorf("metric %q: negative counter sample %v", name, v))
	}
	if err := k.s.st.sample(f, ser, v); err != nil {
		return buf, otlp.Refuse(badReason(err), fmt.Errorf("metric %q: value %v: %w", name, v, err))
	}
	return buf, nil
}

// define registers a metric's type (an NDJSON Metric line, an OTLP
// metric); the first definition stays.
func (k *sink) define(name string, typ k6.MetricType, contains k6.ValueType) (*family, error) {
	f, err := k.s.st.define(name, typ, contains)
	if err != nil {
		return nil, refusalOf(err)
	}
	return f, nil
}

// Define implements otlp.Sink: a metric seen first in NDJSON keeps its
// type, and a mismatch is refused.
func (k *sink) Define(name string, typ k6.MetricType, contains k6.ValueType) error {
	f, err := k.define(name, typ, contains)
	if err != nil {
		return err
	}
	if f.typ != typ {
		return otlp.Refuse("type_conflict", fmt.Errorf("already defined as a %s, not a %s", f.typ, typ))
	}
	return nil
}

// refuseOverflow refuses a point that would make a figure infinite or
// wrap a count.
func refuseOverflow(name string) error {
	return otlp.Refuse("overflow", fmt.Errorf("metric %q: %w", name, errOverflow))
}

func (k *sink) AddCounter(name string, tags map[string]string, delta float64) error {
	if delta < 0 {
		return otlp.Refuse("bad_value", fmt.Errorf("metric %q: negative counter increment %v", name, delta)) // the receiver refuses these already
	}
	_, ser, err := k.pooled(name, tags)
	if err != nil {
		return err
	}
	if !ser.addFloat(delta) {
		return refuseOverflow(name)
	}
	return nil
}

func (k *sink) SetGauge(name string, tags map[string]string, v float64) error {
	f, ser, err := k.pooled(name, tags)
	if err != nil {
		return err
	}
	if k.s.st.sample(f, ser, v) != nil {
		return refuseOverflow(name)
	}
	return nil
}

func (k *sink) AddRate(name string, tags map[string]string, zero, nonzero uint64) error {
	_, ser, err := k.pooled(name, tags)
	if err != nil {
		return err
	}
	if ser.zero.Load()+zero < ser.zero.Load() || ser.nonzero.Load()+nonzero < ser.nonzero.Load() {
		return refuseOverflow(name)
	}
	if !addCount(&ser.zero, zero) || !addCount(&ser.nonzero, nonzero) {
		return refuseOverflow(name)
	}
	return nil
}

func (k *sink) AddBuckets(name string, tags map[string]string, values []float64, counts []uint64, sum float64) error {
	f, ser, err := k.pooled(name, tags)
	if err != nil {
		return err
	}
	if ser.h == nil {
		return otlp.Refuse("bad_value", fmt.Errorf("metric %q is not a trend", name))
	}
	// Representative values carry the counts; the sum is exact.
	scaled := make([]float64, len(values))
	for i, v := range values {
		scaled[i] = v * f.scale
	}
	if !ser.h.observeAll(scaled, counts, sum*f.scale) {
		return refuseOverflow(name)
	}
	return nil
}

// Refuse counts the points the OTLP receiver refused, its own refusals
// and the sink's alike.
func (k *sink) Refuse(r *otlp.Refusal, points int) { k.s.refuse(k.src, r, points) }

// Ingested counts the OTLP points stored and notes the newest one's time.
func (k *sink) Ingested(n int, newest int64) {
	k.s.accepted(k.src, n)
	if newest > 0 {
		k.s.lastTS.WithLabelValues(k.src).Set(float64(newest) / 1e9)
		k.s.lag.WithLabelValues(k.src).Set(ingestLag(k.s.st.now(), time.Unix(0, newest)).Seconds())
	}
}
