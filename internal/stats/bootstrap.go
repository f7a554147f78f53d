package stats

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// BootstrapLog computes the ratio of geometric means candidate/baseline
// with a percentile bootstrap interval that resamples whole runs (never
// requests: requests within a run are correlated). Each group is
// resampled with replacement; a group of one run stays fixed. The seed
// makes the result reproducible. resamples <= 0 means 10000.
func BootstrapLog(base, cand []float64, confidence float64, resamples int, seed uint64) (RatioCI, error) {
	if len(base) < 2 {
		return RatioCI{}, fmt.Errorf("baseline has %d run(s): a bootstrap needs at least 2", len(base))
	}
	if len(cand) < 1 {
		return RatioCI{}, errors.New("no candidate runs")
	}
	if !(confidence > 0 && confidence < 1) {
		return RatioCI{}, fmt.Errorf("confidence %v is not in (0,1)", confidence)
	}
	lb, err := bootLogsOf(base)
	if err != nil {
		return RatioCI{}, fmt.Errorf("baseline %w", err)
	}
	lc, err := bootLogsOf(cand)
	if err != nil {
		return RatioCI{}, fmt.Errorf("candidate %w", err)
	}
	if resamples <= 0 {
		resamples = 10000
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	diffs := make([]float64, resamples)
	for i := range diffs {
		diffs[i] = bootResampleMean(lc, rng) - bootResampleMean(lb, rng)
	}
	sort.Float64s(diffs)
	diff := bootMean(lc) - bootMean(lb)
	alpha := 1 - confidence
	lo := Quantile(diffs, alpha/2)
	hi := Quantile(diffs, 1-alpha/2)
	// The bootstrap standard error stands in for SE so the one-sided
	// p-values and the MDC use the same normal-theory shortcut.
	var ss float64
	m := bootMean(diffs)
	for _, d := range diffs {
		ss += (d - m) * (d - m)
	}
	se := math.Sqrt(ss / float64(len(diffs)-1))
	df := float64(len(base) + len(cand) - 2)
	if df < 1 {
		df = 1
	}
	r := RatioCI{
		Ratio:      math.Exp(diff),
		Low:        math.Exp(lo),
		High:       math.Exp(hi),
		Confidence: confidence,
		LogDiff:    diff,
		SE:         se,
		DF:         df,
		Method:     fmt.Sprintf("bootstrap over runs (%d resamples)", resamples),
	}
	r.MDC = math.Expm1((TQuantile(1-alpha/2, df) + TQuantile(0.8, df)) * se)
	return r, nil
}

func bootLogsOf(xs []float64) ([]float64, error) {
	out := make([]float64, len(xs))
	for i, x := range xs {
		if !(x > 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("value %d is %v: log-scale comparison needs positive finite values", i+1, x)
		}
		out[i] = math.Log(x)
	}
	return out, nil
}

func bootResampleMean(xs []float64, rng *rand.Rand) float64 {
	if len(xs) == 1 {
		return xs[0]
	}
	var s float64
	for range xs {
		s += xs[rng.IntN(len(xs))]
	}
	return s / float64(len(xs))
}

func bootMean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
