package exporter

import (
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// NativeSchema is the resolution of the native histogram buckets: schema 7
// splits each power of two into 128 buckets (growth factor 2^(1/128),
// about 0.54%), so histogram_quantile's estimate of any percentile lies
// within 0.54% of a sample in the same bucket, inside the 1% the envelope
// needs even after aggregation with other schema-7 histograms.
const NativeSchema = 7

// nativeZeroThreshold is client_golang's default: only true zeros (k6
// writes 0 ms for reused connections) land in the zero bucket.
const nativeZeroThreshold = 2.938735877055719e-39 // 2^-128

// MinNativeSchema is the coarsest resolution a histogram is reduced to
// (each bucket spans 2^16): at it the whole float64 range needs about 130
// buckets per sign, so reduction always ends below any sane limit.
const MinNativeSchema = -4

// Native bucket defaults: a series keeps up to defaultNativeMaxBuckets
// populated native buckets (schema 7 over 16 powers of two, five
// decades of latency) and all series together up to
// defaultNativeBucketBudget (about 24 MiB held at 12 bytes a bucket; a
// scrape encodes them series by series, a few bytes each). Past
// either, the series' resolution is halved (client_golang's
// NativeHistogramMaxBucketNumber idea); classic buckets stay exact.
const (
	defaultNativeMaxBuckets   = 2048
	defaultNativeBucketBudget = 2 << 20
)

// nativeLimit is the bucket bound shared by every histogram of a store.
type nativeLimit struct {
	max    int   // per series; <= 0: no limit
	budget int64 // all series; <= 0: no limit
	used   atomic.Int64
}

// hist is one histogram series holding classic buckets (shared upper
// bounds) and sparse native buckets, plus exact count and sum. A mutex
// guards it: observations come from one ingest path, scrapes copy it out,
// neither waits long.
type hist struct {
	mu      sync.Mutex
	bounds  []float64 // classic upper bounds, sorted, without +Inf
	classic []uint64  // len(bounds)+1, the last is the +Inf bucket; not cumulative
	count   uint64
	sum     float64
	zero    uint64
	schema  int32 // NativeSchema until reduced
	pos     sparseBuckets
	neg     sparseBuckets
	created time.Time
	lim     *nativeLimit
}

// sparseBuckets holds the populated native buckets, sorted by index: the
// memory a series takes grows with the buckets it uses, never with the
// distance between its smallest and largest sample.
type sparseBuckets struct {
	idx []int32
	cnt []uint64
}

// add counts n at index i; true when i is a new bucket.
func (b *sparseBuckets) add(i int32, n uint64) bool {
	if k := len(b.idx) - 1; k >= 0 && b.idx[k] == i { // the common case: the latest bucket again
		b.cnt[k] += n
		return false
	}
	j, found := slices.BinarySearch(b.idx, i)
	if found {
		b.cnt[j] += n
		return false
	}
	b.idx = slices.Insert(b.idx, j, i)
	b.cnt = slices.Insert(b.cnt, j, n)
	return true
}

// halve merges bucket pairs, as one schema down; it returns the buckets
// removed. Index i at schema s lies in index ceil(i/2) at schema s-1.
func (b *sparseBuckets) halve() int {
	out := 0
	for k := range b.idx {
		ni := (b.idx[k] + 1) >> 1
		if out > 0 && b.idx[out-1] == ni {
			b.cnt[out-1] += b.cnt[k]
			continue
		}
		b.idx[out], b.cnt[out] = ni, b.cnt[k]
		out++
	}
	removed := len(b.idx) - out
	b.idx, b.cnt = b.idx[:out], b.cnt[:out]
	return removed
}

func newHist(bounds []float64, created time.Time, lim *nativeLimit) *hist {
	if lim == nil {
		lim = &nativeLimit{}
	}
	return &hist{bounds: bounds, classic: make([]uint64, len(bounds)+1), created: created, schema: NativeSchema, lim: lim}
}

// release returns the series' native buckets to the shared budget (the
// series is being deleted).
func (h *hist) release() {
	h.mu.Lock()
	h.lim.used.Add(-int64(len(h.pos.idx) + len(h.neg.idx)))
	h.pos, h.neg = sparseBuckets{}, sparseBuckets{}
	h.mu.Unlock()
}

// nativeIndex is the bucket index of |v| at NativeSchema: bucket i holds
// (2^((i-1)/128), 2^(i/128)].
func nativeIndex(v float64) int32 {
	frac, exp := math.Frexp(v) // v = frac * 2^exp, frac in [0.5, 1)
	// log2(v) = exp + log2(frac); the bounds table avoids a Log2 per call.
	return int32(exp)<<NativeSchema + int32(sort.SearchFloat64s(nativeBounds[:], frac)) - (1 << NativeSchema)
}

// nativeBounds[j] = 2^(j/128 - 1), the upper bounds within [0.5, 1).
var nativeBounds = func() (b [1 << NativeSchema]float64) {
	for j := range b {
		b[j] = math.Exp2(float64(j)/(1<<NativeSchema) - 1)
	}
	return b
}()

// observe records n samples of value v (base units) and adds sum to the
// total; sum is n*v for real samples, the exact sum for bucketed input.
// false: the point would overflow the count or make the sum infinite, and
// is refused whole.
func (h *hist) observe(v float64, n uint64, sum float64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ns := h.sum + sum
	if h.count+n < h.count || math.IsInf(ns, 0) || math.IsNaN(ns) {
		return false
	}
	h.count, h.sum = h.count+n, ns
	h.put(v, n)
	return true
}

// observeAll records counts[i] samples at values[i] and sum, all or
// nothing.
func (h *hist) observeAll(values []float64, counts []uint64, sum float64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	total := h.count
	for _, n := range counts {
		if total+n < total {
			return false
		}
		total += n
	}
	ns := h.sum + sum
	if math.IsInf(ns, 0) || math.IsNaN(ns) {
		return false
	}
	h.count, h.sum = total, ns
	for i, v := range values {
		if counts[i] > 0 {
			h.put(v, counts[i])
		}
	}
	return true
}

// put counts n samples at v in the classic and native buckets; h.mu held.
func (h *hist) put(v float64, n uint64) {
	h.classic[sort.SearchFloat64s(h.bounds, v)] += n // first bound >= v: buckets are upper-inclusive
	var grew bool
	switch {
	case v > nativeZeroThreshold:
		grew = h.pos.add(h.index(v), n)
	case v < -nativeZeroThreshold:
		grew = h.neg.add(h.index(-v), n)
	default: // zero or tiny values
		h.zero += n
	}
	if !grew {
		return
	}
	used := h.lim.used.Add(1)
	over := h.lim.budget > 0 && used > h.lim.budget
	for h.schema > MinNativeSchema && (over || h.lim.max > 0 && len(h.pos.idx)+len(h.neg.idx) > h.lim.max) {
		h.schema--
		h.lim.used.Add(-int64(h.pos.halve() + h.neg.halve()))
		over = false // one halving per new bucket past the shared budget
	}
}

// index is the native bucket of |v| at the series' schema.
func (h *hist) index(v float64) int32 {
	i := nativeIndex(v)
	if d := NativeSchema - h.schema; d > 0 {
		i = (i + (1 << d) - 1) >> d // ceil(i / 2^d)
	}
	return i
}

// write fills a dto histogram with both the classic and the native parts;
// bounds are the shared pointers to the classic upper bounds (nil: make
// them).
func (h *hist) write(out *dto.Histogram, bounds []*float64) { h.writeParts(out, bounds, true) }

// writeParts is write, without the native buckets when native is false
// (the text format shows only the classic ones).
func (h *hist) writeParts(out *dto.Histogram, bounds []*float64, native bool) {
	if bounds == nil {
		bounds = make([]*float64, len(h.bounds))
		for i := range h.bounds {
			bounds[i] = &h.bounds[i]
		}
	}
	// One allocation each for the buckets and their counts.
	bs := make([]dto.Bucket, len(h.bounds))
	cums := make([]uint64, len(h.bounds))
	buckets := make([]*dto.Bucket, len(h.bounds))
	h.mu.Lock()
	count, sum, zero, schema := h.count, h.sum, h.zero, h.schema
	var cum uint64
	for i := range h.bounds {
		cum += h.classic[i]
		cums[i] = cum
		bs[i] = dto.Bucket{CumulativeCount: &cums[i], UpperBound: bounds[i]}
		buckets[i] = &bs[i]
	}
	var posSpans, negSpans []*dto.BucketSpan
	var posDeltas, negDeltas []int64
	if native {
		posSpans, posDeltas = spansOf(&h.pos)
		negSpans, negDeltas = spansOf(&h.neg)
	}
	h.mu.Unlock()

	out.SampleCount = ptr(count)
	out.SampleSum = ptr(sum)
	out.Bucket = buckets
	out.CreatedTimestamp = timestamppb.New(h.created)
	if !native {
		return
	}
	out.Schema = ptr(schema)
	out.ZeroThreshold = ptr(nativeZeroThreshold)
	out.ZeroCount = ptr(zero)
	out.PositiveSpan, out.PositiveDelta = posSpans, posDeltas
	out.NegativeSpan, out.NegativeDelta = negSpans, negDeltas
	if count == 0 && len(posSpans) == 0 && len(negSpans) == 0 {
		// A native histogram without any bucket needs one empty span, or
		// parsers take it for a classic-only histogram.
		out.PositiveSpan = []*dto.BucketSpan{{Offset: ptr(int32(0)), Length: ptr(uint32(0))}}
	}
}

// spansOf encodes sparse counts as spans and deltas, bridging gaps of up
// to two empty buckets with zeros (as client_golang does). Spans and
// their fields are allocated in one go.
func spansOf(b *sparseBuckets) ([]*dto.BucketSpan, []int64) {
	if len(b.idx) == 0 {
		return nil, nil
	}
	nspans, total := 1, 1
	for k := 1; k < len(b.idx); k++ {
		gap := int(b.idx[k] - b.idx[k-1] - 1)
		if gap > 2 {
			nspans++
			total++
		} else {
			total += gap + 1
		}
	}
	spans := make([]dto.BucketSpan, nspans)
	offs := make([]int32, nspans)
	lens := make([]uint32, nspans)
	out := make([]*dto.BucketSpan, nspans)
	deltas := make([]int64, 0, total)
	var prev int64
	si := 0
	offs[0] = b.idx[0]
	for k, c := range b.cnt {
		if k > 0 {
			gap := b.idx[k] - b.idx[k-1] - 1
			if gap > 2 {
				si++
				offs[si] = gap
			} else {
				for range gap {
					deltas = append(deltas, -prev)
					prev = 0
					lens[si]++
				}
			}
		}
		deltas = append(deltas, int64(c)-prev)
		prev = int64(c)
		lens[si]++
	}
	for i := range spans {
		spans[i] = dto.BucketSpan{Offset: &offs[i], Length: &lens[i]}
		out[i] = &spans[i]
	}
	return out, deltas
}

func ptr[T any](v T) *T { return &v }

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }
