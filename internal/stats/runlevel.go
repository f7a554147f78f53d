package stats

import (
	"errors"
	"fmt"
	"math"
)

// QuantileCI is the distribution-free confidence interval of the p
// quantile of the population an ascending-sorted sample came from: the
// order statistics at ranks n·p ∓ z·√(n·p·(1−p)) (the normal
// approximation to the binomial count of samples below the quantile).
// It assumes the samples are independent. ok is false when a rank falls
// outside the sample (too few samples for the interval to reach the
// confidence), and then no interval is given.
func QuantileCI(sorted []float64, p, confidence float64) (lo, hi float64, ok bool) {
	n := len(sorted)
	if n == 0 || !(p > 0 && p < 1) || !(confidence > 0 && confidence < 1) {
		return 0, 0, false
	}
	z := NormalQuantile(1 - (1-confidence)/2)
	np := float64(n) * p
	half := z * math.Sqrt(np*(1-p))
	// 1-based ranks j < k with P(X_(j) ≤ q ≤ X_(k)) ≥ confidence.
	j := int(math.Floor(np - half))
	k := int(math.Ceil(np+half)) + 1
	if j < 1 || k > n {
		return 0, 0, false
	}
	return sorted[j-1], sorted[k-1], true
}

// LogSEOfInterval turns a confidence interval [lo, hi] of a positive
// figure into the standard error of its logarithm, reading the interval
// as ln(x) ± z·SE.
func LogSEOfInterval(lo, hi, confidence float64) float64 {
	if !(lo > 0) || !(hi >= lo) {
		return math.NaN()
	}
	z := NormalQuantile(1 - (1-confidence)/2)
	return (math.Log(hi) - math.Log(lo)) / (2 * z)
}

// RunValue is one run's value of a figure and, when known, the sampling
// variance of its logarithm within the run (NaN when unknown, as for
// figures copied from a summary file).
type RunValue struct {
	X      float64
	LogVar float64
}

// RunLevelLog compares candidate runs with baseline runs on the log scale
// with a two-level model: a run's ln value is the figure's level, plus a
// between-run effect of variance τ², plus the run's own sampling error of
// variance v (known from its samples, or not).
//
// The baseline's sample variance s² of ln values estimates τ² + v̄, v̄ the
// mean sampling variance of the baseline runs; so τ̂² = max(0, s² − v̄).
// When no baseline run's sampling variance is known, the candidates' mean
// stands in for v̄ (same test, similar sample sizes), and when neither is
// known v̄ = 0 and τ̂² = s². A candidate run then varies by
// τ̂² + v_run, and never by less than s² (a candidate is at least as
// uncertain as one baseline run was). The difference of mean logs has
// variance s²/n_base + Σ var_run / m²; its t reference takes
// Satterthwaite's degrees of freedom, with the terms built on s² carrying
// n_base−1 and the known sampling variances carrying no estimation error.
// With two or more candidate runs their own spread replaces the model
// when it is larger.
func RunLevelLog(base, cand []RunValue, confidence float64) (RatioCI, error) {
	k, m := len(base), len(cand)
	if k < 2 {
		return RatioCI{}, fmt.Errorf("baseline has %d run(s): a confidence interval needs at least 2", k)
	}
	if m < 1 {
		return RatioCI{}, errors.New("no candidate runs")
	}
	if !(confidence > 0 && confidence < 1) {
		return RatioCI{}, fmt.Errorf("confidence %v is not in (0,1)", confidence)
	}
	logs := func(vs []RunValue, what string) ([]float64, float64, int, error) {
		out := make([]float64, len(vs))
		var vsum float64
		known := 0
		for i, v := range vs {
			if !(v.X > 0) || math.IsInf(v.X, 0) {
				return nil, 0, 0, fmt.Errorf("%s value %d is %v: log-scale comparison needs positive finite values", what, i+1, v.X)
			}
			out[i] = math.Log(v.X)
			if v.LogVar >= 0 && !math.IsInf(v.LogVar, 0) {
				vsum += v.LogVar
				known++
			}
		}
		if known == 0 {
			return out, math.NaN(), 0, nil
		}
		return out, vsum / float64(known), known, nil
	}
	lb, vb, _, err := logs(base, "baseline")
	if err != nil {
		return RatioCI{}, err
	}
	lc, vc, _, err := logs(cand, "candidate")
	if err != nil {
		return RatioCI{}, err
	}
	mb, sb2 := meanVar(lb)
	mc, sc2 := meanVar(lc)
	vBar := vb
	if math.IsNaN(vBar) {
		vBar = vc
	}
	if math.IsNaN(vBar) {
		vBar = 0
	}
	tau2 := math.Max(0, sb2-vBar)

	// Candidate term: Σ var_run / m², split into the part resting on s²
	// (estimated, n_base−1 df) and the known sampling part.
	var est, known float64
	for _, c := range cand {
		v := c.LogVar
		if !(v >= 0) || math.IsInf(v, 0) {
			v = vBar // unknown: like a typical run
		}
		if tau2+v >= sb2 {
			est += tau2
			known += v
		} else {
			est += sb2 // floor: one baseline run's variance
		}
	}
	mm := float64(m * m)
	est, known = est/mm, known/mm
	a := sb2 / float64(k) // baseline mean
	se2 := a + est + known
	dfB := float64(k - 1)
	var df float64
	if a+est > 0 {
		df = se2 * se2 * dfB / ((a + est) * (a + est))
	} else {
		df = math.Inf(1)
	}
	method := "run-level log (between-run spread from per-run values"
	if !math.IsNaN(vc) {
		method += ", candidate sampling error from its samples"
	}
	method += ")"
	if m >= 2 && sc2/float64(m) > est+known {
		// The candidates' own spread is larger than the model says:
		// Welch on it, with its m−1 degrees of freedom.
		c := sc2 / float64(m)
		se2 = a + c
		df = se2 * se2 / (a*a/dfB + c*c/float64(m-1))
		method = "run-level log (candidates' own spread, larger than the model's)"
	}
	if df > 1e6 {
		df = 1e6
	}
	se := math.Sqrt(se2)
	diff := mc - mb
	tq := TQuantile(1-(1-confidence)/2, df)
	r := RatioCI{
		Ratio:      math.Exp(diff),
		Low:        math.Exp(diff - tq*se),
		High:       math.Exp(diff + tq*se),
		Confidence: confidence,
		LogDiff:    diff,
		SE:         se,
		DF:         df,
		Method:     method,
	}
	r.MDC = math.Expm1((tq + TQuantile(0.8, df)) * se)
	return r, nil
}

// meanVar is the mean and the sample variance (n−1; 0 for one value).
func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}
