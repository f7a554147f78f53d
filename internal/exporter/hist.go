package exporter

import (
	"math"
	"sort"
	"sync"
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

// hist is one histogram series holding classic buckets (shared upper
// bounds) and sparse native buckets at NativeSchema, plus exact count
// and sum. A mutex guards it: observations come from one ingest path,
// scrapes copy it out, neither waits long.
type hist struct {
	mu      sync.Mutex
	bounds  []float64 // classic upper bounds, sorted, without +Inf
	classic []uint64  // len(bounds)+1, the last is the +Inf bucket; not cumulative
	count   uint64
	sum     float64
	zero    uint64
	pos     denseBuckets
	neg     denseBuckets
	created time.Time
}

// denseBuckets holds native bucket counts for indexes off..off+len-1.
// Latencies span a few powers of ten, so a dense slice stays small (a
// few hundred entries) and an observation is an index computation plus
// an increment, with no map.
type denseBuckets struct {
	off    int32
	counts []uint64
}

func (d *denseBuckets) add(idx int32, n uint64) {
	if len(d.counts) == 0 {
		d.off = idx
		d.counts = append(d.counts, n)
		return
	}
	if idx < d.off {
		grow := int(d.off - idx)
		nc := make([]uint64, len(d.counts)+grow, len(d.counts)+grow+16)
		copy(nc[grow:], d.counts)
		d.counts = nc
		d.off = idx
	} else if int(idx-d.off) >= len(d.counts) {
		need := int(idx-d.off) + 1
		for len(d.counts) < need {
			d.counts = append(d.counts, 0)
		}
	}
	d.counts[idx-d.off] += n
}

func newHist(bounds []float64, created time.Time) *hist {
	return &hist{bounds: bounds, classic: make([]uint64, len(bounds)+1), created: created}
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
func (h *hist) observe(v float64, n uint64, sum float64) {
	i := sort.SearchFloat64s(h.bounds, v) // first bound >= v: buckets are upper-inclusive
	h.mu.Lock()
	h.classic[i] += n
	h.count += n
	h.sum += sum
	switch {
	case v > nativeZeroThreshold:
		h.pos.add(nativeIndex(v), n)
	case v < -nativeZeroThreshold:
		h.neg.add(nativeIndex(-v), n)
	default: // zero or NaN-free tiny values
		h.zero += n
	}
	h.mu.Unlock()
}

// write fills a dto histogram with both the classic and the native parts;
// bounds are the shared pointers to the classic upper bounds (nil: make
// them).
func (h *hist) write(out *dto.Histogram, bounds []*float64) {
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
	count, sum, zero := h.count, h.sum, h.zero
	var cum uint64
	for i := range h.bounds {
		cum += h.classic[i]
		cums[i] = cum
		bs[i] = dto.Bucket{CumulativeCount: &cums[i], UpperBound: bounds[i]}
		buckets[i] = &bs[i]
	}
	posSpans, posDeltas := spansOf(&h.pos)
	negSpans, negDeltas := spansOf(&h.neg)
	h.mu.Unlock()

	out.SampleCount = ptr(count)
	out.SampleSum = ptr(sum)
	out.Bucket = buckets
	out.Schema = ptr(int32(NativeSchema))
	out.ZeroThreshold = ptr(nativeZeroThreshold)
	out.ZeroCount = ptr(zero)
	out.PositiveSpan, out.PositiveDelta = posSpans, posDeltas
	out.NegativeSpan, out.NegativeDelta = negSpans, negDeltas
	if count == 0 && len(posSpans) == 0 && len(negSpans) == 0 {
		// A native histogram without any bucket needs one empty span, or
		// parsers take it for a classic-only histogram.
		out.PositiveSpan = []*dto.BucketSpan{{Offset: ptr(int32(0)), Length: ptr(uint32(0))}}
	}
	out.CreatedTimestamp = timestamppb.New(h.created)
}

// spansOf encodes dense counts as spans and deltas, skipping runs of more
// than two empty buckets (as client_golang does). Spans and their fields
// are allocated in one go.
func spansOf(d *denseBuckets) ([]*dto.BucketSpan, []int64) {
	// First pass: where spans start and how long they are.
	type run struct{ start, end int } // [start, end) in d.counts
	var runs []run
	for j, c := range d.counts {
		if c == 0 {
			continue
		}
		if n := len(runs); n > 0 && j-runs[n-1].end <= 2 {
			runs[n-1].end = j + 1
		} else {
			runs = append(runs, run{j, j + 1})
		}
	}
	if len(runs) == 0 {
		return nil, nil
	}
	spans := make([]dto.BucketSpan, len(runs))
	offs := make([]int32, len(runs))
	lens := make([]uint32, len(runs))
	out := make([]*dto.BucketSpan, len(runs))
	total := 0
	for _, r := range runs {
		total += r.end - r.start
	}
	deltas := make([]int64, 0, total)
	var prev int64
	next := 0 // index in d.counts after the previous span
	for i, r := range runs {
		if i == 0 {
			offs[i] = d.off + int32(r.start)
		} else {
			offs[i] = int32(r.start - next)
		}
		lens[i] = uint32(r.end - r.start)
		spans[i] = dto.BucketSpan{Offset: &offs[i], Length: &lens[i]}
		out[i] = &spans[i]
		for _, c := range d.counts[r.start:r.end] {
			deltas = append(deltas, int64(c)-prev)
			prev = int64(c)
		}
		next = r.end
	}
	return out, deltas
}

func ptr[T any](v T) *T { return &v }

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }
