package stats

import "math"

// SketchAlpha is the sketch's relative accuracy: every quantile it returns
// is within 0.5% of the value at that rank.
const SketchAlpha = 0.005

var (
	sketchGamma  = (1 + SketchAlpha) / (1 - SketchAlpha)
	sketchLogGam = math.Log(sketchGamma)
)

// Sketch is a bounded-memory quantile sketch with logarithmic buckets (the
// DDSketch construction): bucket i holds values in (γ^(i-1), γ^i] with
// γ = (1+α)/(1−α), and reports 2γ^i/(γ+1), which is within α of every value
// in the bucket. Memory depends on the range of values (about 1,000 buckets
// per factor 100 of range), never on how many were added. Zero and negative
// values get their own count and mirrored buckets. Count, sum, min and max
// are exact. Sketches merge losslessly.
type Sketch struct {
	pos, neg buckets
	zero     uint64
	count    uint64
	sum      float64
	min, max float64
}

// buckets is a dense run of counts starting at bucket index off.
type buckets struct {
	off    int
	counts []uint64
}

func (b *buckets) add(i int, n uint64) {
	if len(b.counts) == 0 {
		b.off = i
		b.counts = append(b.counts, n)
		return
	}
	if i < b.off {
		// Grown downward with room to spare, as append grows upward:
		// values that arrive in falling order cost few copies.
		grow := max(b.off-i, len(b.counts)/2)
		nc := make([]uint64, len(b.counts)+grow)
		copy(nc[grow:], b.counts)
		b.counts = nc
		b.off -= grow
	}
	j := i - b.off
	for j >= len(b.counts) {
		b.counts = append(b.counts, 0)
	}
	b.counts[j] += n
}

func bucketOf(x float64) int { return int(math.Ceil(math.Log(x) / sketchLogGam)) }

func bucketValue(i int) float64 {
	return 2 * math.Exp(float64(i)*sketchLogGam) / (sketchGamma + 1)
}

// Add records one sample. NaN is ignored.
func (s *Sketch) Add(x float64) {
	if math.IsNaN(x) {
		return
	}
	if s.count == 0 || x < s.min {
		s.min = x
	}
	if s.count == 0 || x > s.max {
		s.max = x
	}
	s.count++
	s.sum += x
	switch {
	case x > 0:
		s.pos.add(bucketOf(x), 1)
	case x < 0:
		s.neg.add(bucketOf(-x), 1)
	default:
		s.zero++
	}
}

// Merge adds o's samples into s.
func (s *Sketch) Merge(o *Sketch) {
	if o == nil || o.count == 0 {
		return
	}
	if s.count == 0 || o.min < s.min {
		s.min = o.min
	}
	if s.count == 0 || o.max > s.max {
		s.max = o.max
	}
	s.count += o.count
	s.sum += o.sum
	s.zero += o.zero
	for j, c := range o.pos.counts {
		if c > 0 {
			s.pos.add(o.pos.off+j, c)
		}
	}
	for j, c := range o.neg.counts {
		if c > 0 {
			s.neg.add(o.neg.off+j, c)
		}
	}
}

// Count, Sum, Min and Max are exact.
func (s *Sketch) Count() uint64 { return s.count }
func (s *Sketch) Sum() float64  { return s.sum }
func (s *Sketch) Min() float64  { return s.min }
func (s *Sketch) Max() float64  { return s.max }

// Bytes is the memory the buckets hold.
func (s *Sketch) Bytes() int { return 8 * (cap(s.pos.counts) + cap(s.neg.counts)) }

// rank returns an estimate of the sample at 0-based rank r in ascending
// order, clamped to [min, max].
func (s *Sketch) rank(r uint64) float64 {
	if r == 0 {
		return s.min
	}
	if r >= s.count-1 {
		return s.max
	}
	v := s.max
	seen := uint64(0)
	// Negative values: largest magnitude first.
	found := false
	for j := len(s.neg.counts) - 1; j >= 0 && !found; j-- {
		seen += s.neg.counts[j]
		if seen > r {
			v, found = -bucketValue(s.neg.off+j), true
		}
	}
	if !found {
		seen += s.zero
		if seen > r {
			v, found = 0, true
		}
	}
	for j := 0; j < len(s.pos.counts) && !found; j++ {
		seen += s.pos.counts[j]
		if seen > r {
			v, found = bucketValue(s.pos.off+j), true
		}
	}
	return math.Min(math.Max(v, s.min), s.max)
}

// QuantileCI is QuantileCI's interval read from the sketch: the order
// statistics at the interval's ranks, each within α of the exact one.
func (s *Sketch) QuantileCI(p, confidence float64) (lo, hi float64, ok bool) {
	j, k, ok := QuantileCIRanks(int(s.count), p, confidence)
	if !ok {
		return 0, 0, false
	}
	return s.rank(uint64(j)), s.rank(uint64(k)), true
}

// Quantile estimates k6's percentile p (in [0,1]): the two samples around
// rank p·(n−1) are estimated within α and interpolated like Quantile, so
// the result is within α of the exact answer.
func (s *Sketch) Quantile(p float64) float64 {
	if s.count == 0 {
		return 0
	}
	lo, hi, frac := QuantileRanks(int(s.count), p)
	a := s.rank(uint64(lo))
	if hi == lo {
		return a
	}
	b := s.rank(uint64(hi))
	return a + (b-a)*frac
}
