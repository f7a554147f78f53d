package otlp

// The k6 mapping: how each OTLP metric and data point becomes k6
// samples handed to the Sink, after validation and the cumulative state.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/envelope-dev/envelope/internal/k6"
)

func (rc *Receiver) name(otelName string) (name string, isRate bool, ok bool) {
	name = otelName
	if rc.opts.Prefix != "" {
		if !strings.HasPrefix(name, rc.opts.Prefix) {
			return "", false, false
		}
		name = name[len(rc.opts.Prefix):]
	} else {
		name = strings.TrimPrefix(name, "k6_")
	}
	name, isRate = strings.CutSuffix(name, ".total")
	return name, isRate, name != ""
}

func contains(unit string) (k6.ValueType, float64) {
	switch unit {
	case "ms":
		return k6.Time, 1
	case "s":
		return k6.Time, 1000
	case "us":
		return k6.Time, 1.0 / 1000
	case "By":
		return k6.Data, 1
	}
	return k6.Default, 1
}

// metricIn is one OTLP metric being applied: its k6 name, type of value
// and unit scale, and the export request's tally.
type metricIn struct {
	rc        *Receiver
	c         *consumer
	resKey    uint64
	m         *metricpb.Metric
	name      string
	isRate    bool
	cont      k6.ValueType
	unitScale float64
}

func (rc *Receiver) metric(c *consumer, resKey uint64, m *metricpb.Metric) *pointError {
	name, isRate, ok := rc.name(m.GetName())
	if !ok {
		return &pointError{"prefix", m.GetName(), fmt.Sprintf("name lacks the metric prefix %q", rc.opts.Prefix), false}
	}
	if !utf8.ValidString(name) {
		return &pointError{"invalid_utf8", strings.ToValidUTF8(m.GetName(), "\uFFFD"), "metric name is not valid UTF-8", false}
	}
	x := &metricIn{rc: rc, c: c, resKey: resKey, m: m, name: name, isRate: isRate}
	x.cont, x.unitScale = contains(m.GetUnit())
	switch d := m.GetData().(type) {
	case *metricpb.Metric_Sum:
		return x.sum(d.Sum)
	case *metricpb.Metric_Gauge:
		return x.gauge(d.Gauge)
	case *metricpb.Metric_Histogram:
		return x.histogram(d.Histogram)
	case *metricpb.Metric_ExponentialHistogram:
		return x.exponential(d.ExponentialHistogram)
	}
	return x.perr("unsupported_type", "data type %T is not produced by k6", m.GetData())
}

func (x *metricIn) perr(reason, format string, a ...any) *pointError {
	return &pointError{reason, x.m.GetName(), fmt.Sprintf(format, a...), false}
}

// define declares the metric to the sink; a refusal refuses the metric.
func (x *metricIn) define(typ k6.MetricType) *pointError {
	if err := x.rc.sink.Define(x.name, typ, x.cont); err != nil {
		r := RefusalOf(err)
		return &pointError{r.Reason, x.m.GetName(), err.Error(), r.Overflow}
	}
	return nil
}

// seen notes the newest point time of the request.
func (x *metricIn) seen(t uint64) {
	if t > x.c.newest {
		x.c.newest = t
	}
}

// bad refuses one data point.
func (x *metricIn) bad(reason string, e *pointError) { x.c.reject(Refuse(reason, e), 1) }

// sinkErr files the sink's answer for one data point.
func (x *metricIn) sinkErr(err error) { x.c.sinkErr(x.m.GetName(), err) }

func cumulative(t metricpb.AggregationTemporality) bool {
	return t != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
}

// sum applies a Sum: a k6 rate (".total"), a gauge (not monotonic) or a
// counter.
func (x *metricIn) sum(d *metricpb.Sum) *pointError {
	typ := k6.Counter
	switch {
	case x.isRate:
		typ = k6.Rate
	case !d.GetIsMonotonic():
		typ = k6.Gauge
	}
	if e := x.define(typ); e != nil {
		return e
	}
	cum := cumulative(d.GetAggregationTemporality())
	for _, dp := range d.GetDataPoints() {
		x.sumPoint(dp, typ, cum)
	}
	return nil
}

func (x *metricIn) sumPoint(dp *metricpb.NumberDataPoint, typ k6.MetricType, cum bool) {
	v := number(dp)
	if !finite(v) || !finite(v*x.unitScale) {
		x.bad("bad_value", x.perr("bad_value", "value %v", v))
		return
	}
	tags, cond := tagsOf(dp.GetAttributes())
	if typ == k6.Gauge {
		if !x.gaugeFresh(dp.GetAttributes(), dp.GetTimeUnixNano()) {
			return
		}
		x.seen(dp.GetTimeUnixNano())
		x.sinkErr(x.rc.sink.SetGauge(x.name, tags, v*x.unitScale))
		return
	}
	delta := v
	if cum {
		st := x.stream(dp.GetAttributes(), dp.GetStartTimeUnixNano(), dp.GetTimeUnixNano())
		if st == nil {
			return
		}
		if st.used && v < st.value {
			// Same start time, lower value: an earlier export
			// arriving late. Only a new start time is a reset.
			x.bad("late_point", x.perr("late_point", "cumulative value %v below %v already seen for the same start time", v, st.value))
			return
		}
		if st.used {
			delta = v - st.value
		}
		st.value, st.used = v, true
	}
	if delta < 0 {
		// A monotonic sum never goes down.
		x.bad("bad_value", x.perr("bad_value", "negative increment %v of a monotonic sum", delta))
		return
	}
	x.seen(dp.GetTimeUnixNano())
	if typ == k6.Rate {
		if delta > MaxRate || delta != math.Trunc(delta) {
			x.bad("bad_value", x.perr("bad_value", "rate count %v is not a whole number below 2^53", delta))
			return
		}
		if cond == "nonzero" {
			x.sinkErr(x.rc.sink.AddRate(x.name, tags, 0, uint64(delta)))
		} else {
			x.sinkErr(x.rc.sink.AddRate(x.name, tags, uint64(delta), 0))
		}
		return
	}
	x.sinkErr(x.rc.sink.AddCounter(x.name, tags, delta*x.unitScale))
}

func (x *metricIn) gauge(d *metricpb.Gauge) *pointError {
	if e := x.define(k6.Gauge); e != nil {
		return e
	}
	for _, dp := range d.GetDataPoints() {
		v := number(dp) * x.unitScale
		if !finite(v) {
			x.bad("bad_value", x.perr("bad_value", "gauge value %v", number(dp)))
			continue
		}
		if !x.gaugeFresh(dp.GetAttributes(), dp.GetTimeUnixNano()) {
			continue
		}
		tags, _ := tagsOf(dp.GetAttributes())
		x.seen(dp.GetTimeUnixNano())
		x.sinkErr(x.rc.sink.SetGauge(x.name, tags, v))
	}
	return nil
}

func (x *metricIn) histogram(d *metricpb.Histogram) *pointError {
	if e := x.define(k6.Trend); e != nil {
		return e
	}
	cum := cumulative(d.GetAggregationTemporality())
	for _, dp := range d.GetDataPoints() {
		x.histogramPoint(dp, cum)
	}
	return nil
}

func (x *metricIn) histogramPoint(dp *metricpb.HistogramDataPoint, cum bool) {
	if e := checkHistogram(dp, x.unitScale); e != "" {
		x.bad("bad_histogram", x.perr("bad_histogram", "%s", e))
		return
	}
	bounds, counts := dp.GetExplicitBounds(), dp.GetBucketCounts()
	x.noteExplicit(dp.GetAttributes(), bounds)
	tags, _ := tagsOf(dp.GetAttributes())
	dc, dsum := slices.Clone(counts), dp.GetSum()
	if cum {
		st := x.histStream(dp.GetAttributes(), dp.GetStartTimeUnixNano(), dp.GetTimeUnixNano(), dp.GetCount(), len(counts)+len(bounds))
		if st == nil {
			return
		}
		prevSum, prevCounts, prevBounds, used := st.sum, st.buckets, st.bounds, st.used
		st.used = true
		st.count, st.sum, st.buckets, st.bounds = dp.GetCount(), dp.GetSum(), slices.Clone(counts), slices.Clone(bounds)
		if used {
			// Buckets of two layouts cannot be told apart: the point
			// becomes the baseline and only its increment is lost.
			if !slices.Equal(bounds, prevBounds) {
				x.bad("bounds_changed", x.perr("bounds_changed", "explicit bounds changed from %v to %v with the same start time", prevBounds, bounds))
				return
			}
			for i := range dc {
				if counts[i] < prevCounts[i] {
					x.bad("not_monotonic", x.perr("not_monotonic", "bucket %d went down from %d to %d with the same start time", i, prevCounts[i], counts[i]))
					return
				}
				dc[i] = counts[i] - prevCounts[i]
			}
			dsum -= prevSum
		}
	}
	values := make([]float64, len(dc))
	for i := range dc {
		values[i] = representative(bounds, i, dp) * x.unitScale
	}
	x.seen(dp.GetTimeUnixNano())
	x.sinkErr(x.rc.sink.AddBuckets(x.name, tags, values, dc, dsum*x.unitScale))
}

func (x *metricIn) exponential(d *metricpb.ExponentialHistogram) *pointError {
	if e := x.define(k6.Trend); e != nil {
		return e
	}
	cum := cumulative(d.GetAggregationTemporality())
	for _, dp := range d.GetDataPoints() {
		x.exponentialPoint(dp, cum)
	}
	return nil
}

func (x *metricIn) exponentialPoint(dp *metricpb.ExponentialHistogramDataPoint, cum bool) {
	if e := checkExponential(dp, x.unitScale); e != "" {
		x.bad("bad_histogram", x.perr("bad_histogram", "%s", e))
		return
	}
	tags, _ := tagsOf(dp.GetAttributes())
	cur := expPointOf(dp)
	delta, dsum := cur, dp.GetSum()
	if cum {
		st := x.histStream(dp.GetAttributes(), dp.GetStartTimeUnixNano(), dp.GetTimeUnixNano(), dp.GetCount(), cur.buckets())
		if st == nil {
			return
		}
		prev, prevSum, used := st.exp, st.sum, st.used
		st.used = true
		st.count, st.sum, st.exp = dp.GetCount(), dp.GetSum(), cur
		if used && prev != nil {
			var ok bool
			if delta, ok = expDiff(prev, cur); !ok {
				// The point becomes the baseline: the next one applies
				// from it, and only this one's increment is lost.
				x.bad("not_monotonic", x.perr("not_monotonic", "exponential buckets at scale %d are not a later state of those at scale %d with the same start time", cur.scale, prev.scale))
				return
			}
			dsum -= prevSum
		}
	}
	values, counts, ok := delta.values(x.unitScale)
	if !ok {
		x.bad("bad_histogram", x.perr("bad_histogram", "bucket beyond the float64 range at scale %d", dp.GetScale()))
		return
	}
	x.seen(dp.GetTimeUnixNano())
	x.sinkErr(x.rc.sink.AddBuckets(x.name, tags, values, counts, dsum*x.unitScale))
}

// representative is the value standing for bucket i's samples: the
// middle of (bounds[i-1], bounds[i]]; the first bucket's upper bound
// (k6's is 0); the last bucket's lower bound, or the max when known.
func representative(bounds []float64, i int, dp *metricpb.HistogramDataPoint) float64 {
	switch {
	case len(bounds) == 0:
		if dp.Count > 0 {
			return dp.GetSum() / float64(dp.GetCount())
		}
		return 0
	case i == 0:
		if dp.Min != nil && dp.GetMin() <= bounds[0] {
			return (dp.GetMin() + bounds[0]) / 2
		}
		return bounds[0]
	case i == len(bounds):
		if dp.Max != nil && dp.GetMax() > bounds[i-1] {
			return (bounds[i-1] + dp.GetMax()) / 2
		}
		return bounds[i-1]
	}
	return (bounds[i-1] + bounds[i]) / 2
}

func number(dp *metricpb.NumberDataPoint) float64 {
	if v, ok := dp.GetValue().(*metricpb.NumberDataPoint_AsInt); ok {
		return float64(v.AsInt)
	}
	return dp.GetAsDouble()
}

// tagsOf turns attributes into k6 tags, taking "condition" apart.
func tagsOf(attrs []*commonpb.KeyValue) (map[string]string, string) {
	tags := make(map[string]string, len(attrs))
	cond := ""
	for _, kv := range attrs {
		v := anyString(kv.GetValue())
		if kv.GetKey() == "condition" {
			cond = v
			continue
		}
		tags[kv.GetKey()] = v
	}
	return tags, cond
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return ""
}
