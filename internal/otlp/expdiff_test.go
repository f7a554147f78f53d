package otlp

import (
	"math"
	"slices"
	"testing"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/envelope-dev/envelope/internal/k6"
)

func rng(offset int32, counts ...uint64) expBucketRange { return expBucketRange{offset, counts} }

func TestExpDiff(t *testing.T) {
	for _, c := range []struct {
		name      string
		prev, cur expPoint
		want      *expPoint // nil: refused
	}{
		{"same scale", expPoint{scale: 3, zero: 1, pos: rng(4, 1, 2)}, expPoint{scale: 3, zero: 2, pos: rng(3, 5, 1, 4)},
			&expPoint{scale: 3, zero: 1, pos: rng(3, 5, 0, 2)}},
		// Scale 8 offset 2430 (5 buckets) is scale 7 offset 1215: the
		// later point's buckets are compared with it merged in pairs.
		{"rescale 8 to 7", expPoint{scale: 8, pos: rng(2430, 1, 1, 1, 0, 2)}, expPoint{scale: 7, pos: rng(1214, 1, 2, 2, 3)},
			&expPoint{scale: 7, pos: rng(1214, 1, 0, 1, 1)}},
		{"rescale by 3", expPoint{scale: 5, pos: rng(-9, 1, 1, 1, 1, 1, 1, 1, 1, 1)}, expPoint{scale: 2, pos: rng(-2, 1, 8, 2)},
			&expPoint{scale: 2, pos: rng(-2, 0, 0, 2)}},
		{"negative buckets", expPoint{scale: 4, neg: rng(10, 2, 1)}, expPoint{scale: 3, neg: rng(4, 1, 4)},
			&expPoint{scale: 3, neg: rng(4, 1, 1)}},
		// A finer later point (never sent by the SDK, which only
		// downscales) is compared at the earlier, coarser scale.
		{"finer later", expPoint{scale: 2, pos: rng(1, 3)}, expPoint{scale: 3, pos: rng(2, 1, 3)},
			&expPoint{scale: 2, pos: rng(1, 1)}},
		{"bucket went down", expPoint{scale: 3, pos: rng(4, 2)}, expPoint{scale: 3, pos: rng(4, 1, 5)}, nil},
		{"bucket moved out of range", expPoint{scale: 3, pos: rng(1, 2)}, expPoint{scale: 3, pos: rng(4, 9)}, nil},
		{"zero went down", expPoint{scale: 3, zero: 2}, expPoint{scale: 3, zero: 1, pos: rng(0, 5)}, nil},
		{"zero threshold changed", expPoint{scale: 3, zero: 1}, expPoint{scale: 3, zeroThreshold: 0.5, zero: 1}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := expDiff(&c.prev, &c.cur)
			switch {
			case c.want == nil && ok:
				t.Errorf("taken: %+v", got)
			case c.want != nil && !ok:
				t.Error("refused")
			case c.want != nil && (got.scale != c.want.scale || got.zero != c.want.zero ||
				!sameRange(got.pos, c.want.pos) || !sameRange(got.neg, c.want.neg)):
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// sameRange compares bucket ranges by their counts, ignoring empty ends.
func sameRange(a, b expBucketRange) bool {
	m := func(r expBucketRange) map[int32]uint64 {
		out := map[int32]uint64{}
		for j, c := range r.counts {
			if c > 0 {
				out[r.offset+int32(j)] = c
			}
		}
		return out
	}
	ma, mb := m(a), m(b)
	if len(ma) != len(mb) {
		return false
	}
	for k, v := range ma {
		if mb[k] != v {
			return false
		}
	}
	return true
}

// sdkHist records samples as the OTel SDK's exponential aggregation
// does: it starts fine and halves its resolution whenever a sign's
// buckets would span more than maxSize.
type sdkHist struct {
	scale       int32
	count, zero uint64
	sum         float64
	pos, neg    map[int32]uint64
	maxSize     int32
}

// record adds a sample of magnitude 2^((2k+1)/32) (never on a bucket
// boundary at the scales used) with a sign, or zero.
func (h *sdkHist) record(sign int, k int32) {
	h.count++
	if sign == 0 {
		h.zero++
		return
	}
	side := h.pos
	if sign < 0 {
		side = h.neg
	}
	h.sum += float64(sign) * math.Exp2(float64(2*k+1)/32)
	side[sdkIndex(k, h.scale)]++
	for h.span(h.pos) > h.maxSize || h.span(h.neg) > h.maxSize {
		h.scale--
		for _, s := range []map[int32]uint64{h.pos, h.neg} {
			old := maps(s)
			clear(s)
			for i, c := range old {
				s[i>>1] += c
			}
		}
	}
}

func maps(m map[int32]uint64) map[int32]uint64 {
	out := make(map[int32]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sdkIndex is the bucket of 2^((2k+1)/32) at scale <= 4:
// floor((2k+1)·2^scale/32).
func sdkIndex(k, scale int32) int32 {
	if scale >= 0 {
		return floorDiv((2*k+1)<<scale, 32)
	}
	return floorDiv(2*k+1, 32<<-scale)
}

func floorDiv(a, b int32) int32 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

func (h *sdkHist) span(m map[int32]uint64) int32 {
	if len(m) == 0 {
		return 0
	}
	lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
	for i := range m {
		lo, hi = min(lo, i), max(hi, i)
	}
	return hi - lo + 1
}

func dense(m map[int32]uint64) *metricpb.ExponentialHistogramDataPoint_Buckets {
	if len(m) == 0 {
		return nil
	}
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	counts := make([]uint64, keys[len(keys)-1]-keys[0]+1)
	for _, k := range keys {
		counts[k-keys[0]] = m[k]
	}
	return &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: keys[0], BucketCounts: counts}
}

// point is the histogram's cumulative data point.
func (h *sdkHist) point() *metricpb.ExponentialHistogramDataPoint {
	sum := h.sum
	return &metricpb.ExponentialHistogramDataPoint{StartTimeUnixNano: 1, TimeUnixNano: 2, Count: h.count, Sum: &sum,
		Scale: h.scale, ZeroCount: h.zero, Positive: dense(h.pos), Negative: dense(h.neg)}
}

// bucketSink keeps every bucket the receiver applies.
type bucketSink struct {
	values []float64
	counts []uint64
	sum    float64
}

func (s *bucketSink) Define(string, k6.MetricType, k6.ValueType) error        { return nil }
func (s *bucketSink) AddCounter(string, map[string]string, float64) error     { return nil }
func (s *bucketSink) SetGauge(string, map[string]string, float64) error       { return nil }
func (s *bucketSink) AddRate(string, map[string]string, uint64, uint64) error { return nil }
func (s *bucketSink) Ingested(int, int64)                                     {}
func (s *bucketSink) Refuse(*Refusal, int)                                    {}
func (s *bucketSink) AddBuckets(_ string, _ map[string]string, values []float64, counts []uint64, sum float64) error {
	s.values = append(s.values, values...)
	s.counts = append(s.counts, counts...)
	s.sum += sum
	return nil
}

func expRequest(dp *metricpb.ExponentialHistogramDataPoint) []*metricpb.ResourceMetrics {
	return []*metricpb.ResourceMetrics{{ScopeMetrics: []*metricpb.ScopeMetrics{{Metrics: []*metricpb.Metric{{
		Name: "k6_http_req_duration", Unit: "ms", Data: &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{
			AggregationTemporality: metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints:             []*metricpb.ExponentialHistogramDataPoint{dp}}}}}}}}}
}

// checkCumulativeSequence builds cumulative exponential points from data
// (samples spreading over decades, so the histogram rescales), delivers
// them with retries and reorders, and checks that what the receiver
// applied adds up to the newest point delivered: count, sum and every
// bucket at that point's scale.
func checkCumulativeSequence(t *testing.T, data []byte) {
	h := &sdkHist{scale: 4, pos: map[int32]uint64{}, neg: map[int32]uint64{}, maxSize: 8}
	var points []*metricpb.ExponentialHistogramDataPoint
	for len(data) >= 2 && len(points) < 64 {
		op, arg := data[0], data[1]
		data = data[2:]
		switch op % 4 {
		case 0, 1: // a sample: magnitude 2^((2k+1)/32), k in [-128, 127]
			h.record(1-2*int(op>>7), int32(int8(arg)))
		case 2:
			h.record(0, 0)
		case 3: // an export
			points = append(points, h.point())
		}
	}
	points = append(points, h.point())
	// Delivery: each point in turn, and by the data's remaining bytes a
	// retry of an earlier point or the next two swapped.
	var order []int
	for i := 0; i < len(points); i++ {
		b := byte(0)
		if len(data) > 0 {
			b, data = data[0], data[1:]
		}
		switch {
		case b%4 == 1:
			order = append(order, i, int(b/4)%(i+1))
		case b%4 == 2 && i+1 < len(points):
			order = append(order, i+1, i)
			i++
		default:
			order = append(order, i)
		}
	}
	sink := &bucketSink{}
	rc := NewReceiver(sink, Options{})
	newest := 0
	for _, i := range order {
		rc.Consume(expRequest(points[i]))
		newest = max(newest, i)
	}
	last := points[newest]
	if testing.Verbose() {
		for _, p := range points {
			t.Logf("point count %d scale %d zero %d pos %v neg %v", p.GetCount(), p.GetScale(), p.GetZeroCount(), p.GetPositive(), p.GetNegative())
		}
		t.Logf("applied %v %v", sink.values, sink.counts)
	}
	var count uint64
	type bucket struct {
		negative bool
		index    int32
	}
	got := map[bucket]uint64{}
	var zero uint64
	for j, v := range sink.values {
		count += sink.counts[j]
		if v == 0 {
			zero += sink.counts[j]
			continue
		}
		// Each value is a bucket's geometric middle at the scale of its
		// delta, never coarser than the newest point's: it lies inside
		// one bucket of the newest point.
		idx := int32(math.Floor(math.Log2(math.Abs(v)) * math.Exp2(float64(last.GetScale()))))
		got[bucket{v < 0, idx}] += sink.counts[j]
	}
	want := map[bucket]uint64{}
	for j, c := range last.GetPositive().GetBucketCounts() {
		if c > 0 {
			want[bucket{false, last.GetPositive().GetOffset() + int32(j)}] = c
		}
	}
	for j, c := range last.GetNegative().GetBucketCounts() {
		if c > 0 {
			want[bucket{true, last.GetNegative().GetOffset() + int32(j)}] = c
		}
	}
	for k, c := range got {
		if c == 0 {
			delete(got, k)
		}
	}
	if count != last.GetCount() || zero != last.GetZeroCount() || len(got) != len(want) {
		t.Fatalf("order %v: applied %d samples (%d zero) in %d buckets, newest point %d (%d zero) in %d buckets", order, count, zero, len(got), last.GetCount(), last.GetZeroCount(), len(want))
	}
	for k, c := range want {
		if got[k] != c {
			t.Fatalf("order %v: bucket %+v at scale %d: applied %d, newest point %d", order, k, last.GetScale(), got[k], c)
		}
	}
	var mag float64
	for _, v := range sink.values {
		mag += math.Abs(v)
	}
	if math.Abs(sink.sum-last.GetSum()) > 1e-9*(math.Abs(last.GetSum())+mag+1) {
		t.Fatalf("order %v: applied sum %v, newest point %v", order, sink.sum, last.GetSum())
	}
}

// FuzzCumulativeExponential: whatever the rescales, retries and
// reorders, the applied total equals the newest cumulative point.
func FuzzCumulativeExponential(f *testing.F) {
	f.Add([]byte{0, 10, 0, 20, 3, 0, 0, 100, 0, 200, 3, 0, 128, 50, 2, 0, 3, 0, 1, 2, 5})
	f.Add([]byte{0, 1, 3, 0, 0, 127, 3, 0, 0, 128, 3, 0, 128, 1, 3, 0, 2, 2, 2, 1, 9})
	f.Add([]byte{0, 0, 0, 30, 0, 60, 0, 90, 3, 0, 0, 160, 0, 220, 3, 0, 0, 250, 1, 1})
	f.Fuzz(checkCumulativeSequence)
}

// A fixed set of sequences, for the unit tests: samples over decades,
// both signs and zeros, with retries and swaps.
func TestCumulativeExponentialSequences(t *testing.T) {
	for seed := range 200 {
		data := make([]byte, 120)
		x := uint32(seed*2654435761 + 1)
		for i := range data {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			data[i] = byte(x)
		}
		checkCumulativeSequence(t, data)
	}
}

func histReq(start uint64, bounds []float64, counts ...uint64) []*metricpb.ResourceMetrics {
	var n uint64
	for _, c := range counts {
		n += c
	}
	return []*metricpb.ResourceMetrics{{ScopeMetrics: []*metricpb.ScopeMetrics{{Metrics: []*metricpb.Metric{{
		Name: "k6_http_req_duration", Unit: "ms", Data: &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{
			AggregationTemporality: metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints: []*metricpb.HistogramDataPoint{{StartTimeUnixNano: start, TimeUnixNano: start + n, Count: n,
				ExplicitBounds: bounds, BucketCounts: counts}}}}}}}}}}
}

// An explicit histogram whose bounds change with the same start time is
// refused for that point, with its reason; it becomes the baseline of
// the next point, which applies its own increment only.
func TestExplicitBoundsChanged(t *testing.T) {
	sink := newSumSink()
	rc := NewReceiver(sink, Options{})
	steps := []struct {
		req      []*metricpb.ResourceMetrics
		rejected int
		count    uint64
	}{
		{histReq(1, []float64{10, 100}, 1, 2, 3), 0, 6},
		{histReq(1, []float64{10, 100}, 2, 2, 3), 0, 7},
		{histReq(1, []float64{5, 10, 100}, 1, 1, 2, 4), 1, 7}, // new layout: refused
		{histReq(1, []float64{5, 10, 100}, 1, 2, 2, 5), 0, 9}, // from the new baseline
		{histReq(1, []float64{5, 10, 100}, 1, 1, 2, 6), 1, 9}, // a bucket went down
	}
	for i, s := range steps {
		_, rejected, _ := rc.Consume(s.req)
		if rejected != s.rejected || sink.hcount["http_req_duration"] != s.count {
			t.Errorf("step %d: %d rejected, count %d; want %d, %d", i, rejected, sink.hcount["http_req_duration"], s.rejected, s.count)
		}
	}
	if !slices.Equal(sink.refused, []string{"bounds_changed", "not_monotonic"}) {
		t.Errorf("reasons %v", sink.refused)
	}
}
