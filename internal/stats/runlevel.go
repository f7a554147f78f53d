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
	j, k, ok := QuantileCIRanks(len(sorted), p, confidence)
	if !ok {
		return 0, 0, false
	}
	return sorted[j], sorted[k], true
}

// QuantileCIRanks are the 0-based ranks of the order statistics that
// bound QuantileCI's interval among n samples, for callers that find
// order statistics without a sorted slice (a sketch); ok as QuantileCI's.
func QuantileCIRanks(n int, p, confidence float64) (lo, hi int, ok bool) {
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
	return j - 1, k - 1, true
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
// The pooled sample variance s² of ln values within the two groups
// (n_base−1 + n_cand−1 degrees of freedom) estimates τ² + v̄, v̄ the mean
// of the sampling variances that are known (0 when none is), so
// τ̂² = max(0, s² − v̄). Each run then varies by τ̂² + v_run, and never
// by less than s²: a run is at least as
// uncertain as a typical run was; a run whose sampling error is unknown
// varies by s². The difference of mean logs has
// variance Σ var_base/n_base² + Σ var_cand/n_cand²; its t reference takes
// Satterthwaite's degrees of freedom, with the terms built on s²
// carrying n_base+n_cand−2 and the known sampling variances carrying no
// estimation error. So a run with few samples, whose quantile sampling
// alone moves far, weighs that in, and the between-run spread is the
// one the runs showed.
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
	var vsum float64
	known, candKnown := 0, 0
	logs := func(vs []RunValue, what string) ([]float64, error) {
		out := make([]float64, len(vs))
		for i, v := range vs {
			if !(v.X > 0) || math.IsInf(v.X, 0) {
				return nil, fmt.Errorf("%s value %d is %v: log-scale comparison needs positive finite values", what, i+1, v.X)
			}
			out[i] = math.Log(v.X)
			if knownVar(v.LogVar) {
				vsum += v.LogVar
				known++
			}
		}
		return out, nil
	}
	lb, err := logs(base, "baseline")
	if err != nil {
		return RatioCI{}, err
	}
	baseKnown := known
	lc, err := logs(cand, "candidate")
	if err != nil {
		return RatioCI{}, err
	}
	candKnown = known - baseKnown
	mb, sb2 := MeanVar(lb)
	mc, sc2 := MeanVar(lc)
	dfS := float64(k - 1 + m - 1)
	s2 := (float64(k-1)*sb2 + float64(m-1)*sc2) / dfS
	vBar := 0.0
	if known > 0 {
		vBar = vsum / float64(known)
	}
	tau2 := math.Max(0, s2-vBar)

	// Each group's term Σ var_run / n², split into the part resting on s²
	// (estimated) and the known sampling part.
	var est, exact float64
	term := func(vs []RunValue) {
		n2 := float64(len(vs) * len(vs))
		for _, r := range vs {
			if v := r.LogVar; knownVar(v) && tau2+v >= s2 {
				est += tau2 / n2
				exact += v / n2
			} else {
				// Unknown sampling error, or less than a typical run's
				// total: the run varies like a typical run, s².
				est += s2 / n2
			}
		}
	}
	term(base)
	term(cand)
	se2 := est + exact
	df := math.Inf(1)
	if est > 0 {
		df = se2 * se2 * dfS / (est * est)
	}
	if df > 1e6 {
		df = 1e6
	}
	method := "run-level log (between-run spread from per-run values"
	if candKnown > 0 {
		method += ", candidate sampling error from its samples"
	}
	method += ")"
	return logRatioCI(mc-mb, math.Sqrt(se2), df, confidence, method), nil
}

func knownVar(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// MeanVar is the mean and the sample variance (n−1; 0 for one value).
func MeanVar(xs []float64) (mean, variance float64) {
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

// RunLevel is RunLevelLog on the runs' own n_base + n_cand − 2 degrees
// of freedom, since the between-run variance rests on them alone however
// much of a run's variance its samples explain: the interval a
// comparison of runs judges by.
func RunLevel(base, cand []RunValue, confidence float64) (RatioCI, error) {
	r, err := RunLevelLog(base, cand, confidence)
	if df := float64(len(base) + len(cand) - 2); err == nil && r.DF > df {
		r = r.WithDF(df)
	}
	return r, err
}

// RunLevelMDC is the minimum detectable change (ratio − 1) RunLevel
// gives for later candidate runs, each like typical: the change a
// comparison can tell before any later run exists. ok is false with
// fewer than 2 baseline runs or no later run.
func RunLevelMDC(base []RunValue, typical RunValue, later int, confidence float64) (float64, bool) {
	if len(base) < 2 || later < 1 {
		return 0, false
	}
	cand := make([]RunValue, later)
	for i := range cand {
		cand[i] = typical
	}
	r, err := RunLevel(base, cand, confidence)
	if err != nil || math.IsNaN(r.MDC) {
		return 0, false
	}
	return r.MDC, true
}

// GeoMean is the geometric mean of positive xs; NaN when empty.
func GeoMean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}
