package rules

// SlowFractionBound is the share of requests slower than b.Threshold above
// which the "quantile above X" alert fires over a window holding n
// requests: the binomial bound the generated expression evaluates, at the
// calibration's z. Backtests use it to tell when a regression becomes
// visible to the rule.
func (b LatencyBound) SlowFractionBound(n, z float64) float64 {
	return binomialBound(b.Tail, n, z)
}
