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
