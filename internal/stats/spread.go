// Package stats holds the small statistics the envelope needs: the spread
// of one value per run (mean, sample standard deviation, coefficient of
// variation), Student t quantiles for confidence intervals over a handful
// of runs, and the minimum detectable change such a baseline allows.
package stats

import (
	"math"
	"slices"
)

// Mean is the arithmetic mean of xs; NaN when xs is empty.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// StdDev is the sample standard deviation (n-1 denominator): each run is
// one sample of the service, not the whole of it. It is 0 for
// a single value and NaN for none.
func StdDev(xs []float64) float64 {
	switch len(xs) {
	case 0:
		return math.NaN()
	case 1:
		return 0
	}
	m := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		d := x - m
		ss += d * d
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// CV is the coefficient of variation, StdDev/Mean, as a ratio. It is NaN
// when the mean is zero.
func CV(xs []float64) float64 {
	m := Mean(xs)
	if m == 0 {
		return math.NaN()
	}
	return StdDev(xs) / math.Abs(m)
}

// MinMax returns the smallest and largest of xs (NaN, NaN when empty).
func MinMax(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	return slices.Min(xs), slices.Max(xs)
}

// Summary is the spread of one value per run.
type Summary struct {
	N              int
	Mean, Min, Max float64
	StdDev, CV     float64
	// CILow and CIHigh bound the mean at the requested confidence
	// (Student t, n-1 degrees of freedom); both equal the mean when n < 2.
	CILow, CIHigh float64
}

// Summarize computes the spread of xs with a confidence interval of the
// mean at confidence (e.g. 0.95).
func Summarize(xs []float64, confidence float64) Summary {
	s := Summary{N: len(xs)}
	if len(xs) == 0 {
		return s
	}
	s.Mean = Mean(xs)
	s.Min, s.Max = MinMax(xs)
	s.StdDev = StdDev(xs)
	s.CV = CV(xs)
	s.CILow, s.CIHigh = MeanCI(xs, confidence)
	return s
}

// MeanCI is the two-sided confidence interval of the mean of xs:
// mean ± t(1-(1-confidence)/2, n-1) · s/√n (Georges et al. 2007, for
// n < 30 independent runs). With fewer than two values the interval
// collapses to the mean, since no spread can be estimated.
func MeanCI(xs []float64, confidence float64) (lo, hi float64) {
	m := Mean(xs)
	n := len(xs)
	if n < 2 {
		return m, m
	}
	t := TQuantile(1-(1-confidence)/2, float64(n-1))
	h := t * StdDev(xs) / math.Sqrt(float64(n))
	return m - h, m + h
}

// MDC is the minimum detectable relative change of a mean between this
// baseline of n runs and a candidate of as many runs, two-sided test at
// level alpha with the given power, when run-to-run variation is cv:
//
//	MDC ≈ (z(1-alpha/2) + z(power)) · cv · √(2/n)
//
// (the normal-approximation formula; CV 3% at n = 5 gives 5.3% at alpha
// 0.05 and power 0.8). It is NaN when n < 2 or cv is not finite.
func MDC(n int, cv, alpha, power float64) float64 {
	if n < 2 || math.IsNaN(cv) || math.IsInf(cv, 0) {
		return math.NaN()
	}
	return (NormalQuantile(1-alpha/2) + NormalQuantile(power)) * cv * math.Sqrt(2/float64(n))
}
