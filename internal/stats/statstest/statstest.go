// Package statstest holds what the statistical guards in the tests of
// several packages share: the floor a guard over a few seeds asserts for
// a rate measured over many more. Only tests import it.
package statstest

import "math"

// GuardRisk is the risk every guard passes to BinomialFloor: the chance
// that it fails although the method's true rate is the measured one.
const GuardRisk = 0.005

// BinomialFloor is the floor a guard over n seeds asserts for a rate
// measured at p over many more: the smallest share k/n that a method
// whose true rate is p reaches with probability at least 1−risk (the
// lower binomial bound). It lies below p by the slack n seeds need, so a
// guard never asserts its measurement, and fails only on a real loss.
func BinomialFloor(n int, p, risk float64) float64 {
	if n <= 0 {
		return 0
	}
	var cdf float64
	for k := 0; k <= n; k++ {
		var pk float64
		switch {
		case p >= 1:
			if k == n {
				pk = 1
			}
		case p <= 0:
			if k == 0 {
				pk = 1
			}
		default:
			a, _ := math.Lgamma(float64(n + 1))
			b, _ := math.Lgamma(float64(k + 1))
			c, _ := math.Lgamma(float64(n - k + 1))
			pk = math.Exp(a - b - c + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
		}
		if cdf+pk > risk {
			return float64(k) / float64(n)
		}
		cdf += pk
	}
	return 1
}

// BinomialCeiling is the ceiling a guard over n seeds asserts for a rate
// that must stay low, measured at p over many more: the largest share
// k/n that a method whose true rate is p exceeds with probability at most
// risk (the upper binomial bound). It lies above p by the slack n seeds
// need, so a guard of a rare false alarm never asserts zero of them when
// the measurement saw some.
func BinomialCeiling(n int, p, risk float64) float64 {
	return 1 - BinomialFloor(n, 1-p, risk)
}

// MeasuredRate is the rate a guard's bound starts from when k of n
// measured seeds succeeded: k/n, or for a rate never seen to fail (k = n)
// the one-sided 95% Clopper–Pearson lower bound 0.05^(1/n), so that the
// guard still has its slack; for a ceiling (a rate that must stay low)
// never seen to occur (k = 0), the upper bound 1 − 0.05^(1/n).
func MeasuredRate(k, n int, ceiling bool) float64 {
	switch {
	case !ceiling && k == n:
		return math.Pow(0.05, 1/float64(n))
	case ceiling && k == 0:
		return 1 - math.Pow(0.05, 1/float64(n))
	}
	return float64(k) / float64(n)
}
