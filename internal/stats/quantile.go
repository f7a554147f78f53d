package stats

import "math"

// Quantile is k6's percentile over ascending-sorted samples: linear
// interpolation between closest ranks at rank p·(n−1) (Hyndman–Fan type 7,
// NumPy's default). It is the project's only copy of the formula. An
// empty slice gives 0, as k6's Trend sink does; a caller for whom "no
// samples" must not read as zero checks the length first. p outside
// [0,1] is clamped to the smallest or largest sample.
func Quantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	switch n {
	case 0:
		return 0
	case 1:
		return sorted[0]
	}
	i := p * float64(n-1)
	lo := math.Floor(i)
	hi := math.Ceil(i)
	if lo < 0 {
		return sorted[0]
	}
	if int(hi) >= n {
		return sorted[n-1]
	}
	return sorted[int(lo)] + (sorted[int(hi)]-sorted[int(lo)])*(i-lo)
}

// QuantileRanks returns the two ranks (floor and ceil of p·(n−1)) that
// Quantile reads, for callers that find order statistics without a sorted
// slice (a k-way merge, a sketch).
func QuantileRanks(n int, p float64) (lo, hi int, frac float64) {
	if n <= 1 {
		return 0, 0, 0
	}
	i := p * float64(n-1)
	l := math.Floor(i)
	lo, hi = int(l), int(math.Ceil(i))
	if lo < 0 {
		lo = 0
	}
	if hi > n-1 {
		hi = n - 1
	}
	return lo, hi, i - l
}
