package otlp

import (
	"math"
	"slices"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// expBucketRange is one sign's buckets of an exponential histogram:
// counts[j] is the count of bucket offset+j, which holds the magnitudes
// (base^(offset+j), base^(offset+j+1)] with base = 2^(2^-scale).
type expBucketRange struct {
	offset int32
	counts []uint64
}

// expPoint is a cumulative exponential histogram point as a stream
// remembers it, or the difference of two such points.
type expPoint struct {
	scale         int32
	zeroThreshold float64
	zero          uint64
	pos, neg      expBucketRange
}

// expPointOf copies a data point's layout and counts.
func expPointOf(dp *metricpb.ExponentialHistogramDataPoint) *expPoint {
	return &expPoint{
		scale:         dp.GetScale(),
		zeroThreshold: dp.GetZeroThreshold(),
		zero:          dp.GetZeroCount(),
		pos:           expBucketRange{dp.GetPositive().GetOffset(), slices.Clone(dp.GetPositive().GetBucketCounts())},
		neg:           expBucketRange{dp.GetNegative().GetOffset(), slices.Clone(dp.GetNegative().GetBucketCounts())},
	}
}

// buckets is the number of bucket counts held (the stream budget's unit).
func (p *expPoint) buckets() int { return len(p.pos.counts) + len(p.neg.counts) }

// downscale merges a bucket range by 2^by: bucket i at scale s lies in
// bucket i>>by at scale s-by (an arithmetic shift, so negative indexes
// round down too), as the OTel SDK downscales. by >= 0.
func (b expBucketRange) downscale(by int32) expBucketRange {
	if by == 0 || len(b.counts) == 0 {
		return b
	}
	first := b.offset >> by
	last := (b.offset + int32(len(b.counts)) - 1) >> by
	out := expBucketRange{offset: first, counts: make([]uint64, last-first+1)}
	for j, c := range b.counts {
		out.counts[((b.offset+int32(j))>>by)-first] += c
	}
	return out
}

// at is the count of bucket i.
func (b expBucketRange) at(i int32) uint64 {
	if j := int64(i) - int64(b.offset); j >= 0 && j < int64(len(b.counts)) {
		return b.counts[j]
	}
	return 0
}

// minus is cur - prev bucket by bucket, both at one scale, over cur's
// range; false when a bucket of prev holds more than the same bucket of
// cur (prev is not an earlier state of cur).
func (b expBucketRange) minus(prev expBucketRange) (expBucketRange, bool) {
	for j, c := range prev.counts {
		if c > b.at(prev.offset+int32(j)) {
			return expBucketRange{}, false
		}
	}
	out := expBucketRange{offset: b.offset, counts: slices.Clone(b.counts)}
	for j := range out.counts {
		out.counts[j] -= prev.at(b.offset + int32(j))
	}
	return out, true
}

// expDiff is cur - prev, two cumulative points of one stream, taken at
// their common (coarser) scale: the finer point is downscaled first, so a
// rescale between exports moves no count and is never a reset. ok is
// false when prev is not an earlier state of cur: a bucket or the zero
// count went down, or the zero threshold changed (samples would move
// between the zero bucket and the others).
func expDiff(prev, cur *expPoint) (d *expPoint, ok bool) {
	//nolint:gocritic // exact comparison: the threshold is copied, never computed
	if prev.zeroThreshold != cur.zeroThreshold || prev.zero > cur.zero {
		return nil, false
	}
	scale := min(prev.scale, cur.scale)
	d = &expPoint{scale: scale, zeroThreshold: cur.zeroThreshold, zero: cur.zero - prev.zero}
	if d.pos, ok = cur.pos.downscale(cur.scale - scale).minus(prev.pos.downscale(prev.scale - scale)); !ok {
		return nil, false
	}
	if d.neg, ok = cur.neg.downscale(cur.scale - scale).minus(prev.neg.downscale(prev.scale - scale)); !ok {
		return nil, false
	}
	return d, true
}

// values turns a point's counts into representative values (k6 units
// times unitScale) and counts, the zero bucket first; ok is false when a
// bucket lies beyond the float64 range.
func (p *expPoint) values(unitScale float64) (values []float64, counts []uint64, ok bool) {
	base := math.Exp2(math.Exp2(-float64(p.scale)))
	values = make([]float64, 0, 1+p.buckets())
	counts = make([]uint64, 0, 1+p.buckets())
	values, counts = append(values, 0), append(counts, p.zero)
	for _, side := range []struct {
		b    expBucketRange
		sign float64
	}{{p.neg, -1}, {p.pos, 1}} {
		for j, c := range side.b.counts {
			if c == 0 {
				continue
			}
			// Bucket i holds (base^i, base^(i+1)]; its geometric middle
			// stands for its samples.
			v := side.sign * math.Pow(base, float64(side.b.offset)+float64(j)+0.5) * unitScale
			if !finite(v) {
				return nil, nil, false
			}
			values, counts = append(values, v), append(counts, c)
		}
	}
	return values, counts, true
}
