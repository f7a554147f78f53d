package stats

import (
	"errors"
	"fmt"
	"math"
)

// LogMoments are the moments of log-transformed run-level values: the
// number of runs, the mean of ln(x) and the sample standard deviation
// (n-1) of ln(x).
type LogMoments struct {
	N    int
	Mean float64
	SD   float64
}

// LogMomentsOf computes LogMoments from positive run-level values. It
// fails on an empty slice or a value that is not strictly positive,
// naming the value's position.
func LogMomentsOf(xs []float64) (LogMoments, error) {
	if len(xs) == 0 {
		return LogMoments{}, errors.New("no values")
	}
	var sum float64
	for i, x := range xs {
		if !(x > 0) || math.IsInf(x, 0) {
			return LogMoments{}, fmt.Errorf("value %d is %v: log-scale comparison needs positive finite values", i+1, x)
		}
		sum += math.Log(x)
	}
	m := LogMoments{N: len(xs), Mean: sum / float64(len(xs))}
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			d := math.Log(x) - m.Mean
			ss += d * d
		}
		m.SD = math.Sqrt(ss / float64(len(xs)-1))
	}
	return m, nil
}

// RatioCI is the estimated ratio candidate/baseline of two groups of runs
// with its confidence interval, from a test on log values.
type RatioCI struct {
	Ratio      float64 // exp(mean ln cand - mean ln base)
	Low, High  float64 // confidence interval of the ratio
	Confidence float64
	LogDiff    float64 // mean ln cand - mean ln base
	SE         float64 // standard error of LogDiff
	DF         float64 // degrees of freedom of the t reference
	// MDC is the minimum detectable relative change (ratio - 1) at the
	// two-sided level 1-Confidence with 80% power, for this design.
	MDC float64
	// Method names how the interval was computed.
	Method string
}

// Change is Ratio-1, the relative change.
func (r RatioCI) Change() float64 { return r.Ratio - 1 }

// PAbove is the one-sided p-value of H0: ratio <= 1+margin against
// ratio > 1+margin (a rise beyond the margin).
func (r RatioCI) PAbove(margin float64) float64 {
	return r.pTail(math.Log1p(margin), +1)
}

// PBelow is the one-sided p-value of H0: ratio >= 1-margin against
// ratio < 1-margin (a drop beyond the margin).
func (r RatioCI) PBelow(margin float64) float64 {
	return r.pTail(math.Log1p(-margin), -1)
}

func (r RatioCI) pTail(threshold float64, dir float64) float64 {
	d := dir * (r.LogDiff - threshold)
	if r.SE == 0 {
		if d > 0 {
			return 0
		}
		return 1
	}
	return 1 - TCDF(d/r.SE, r.DF)
}

// WelchLog compares candidate runs with baseline runs on the log scale:
// Welch's unequal-variance t interval of the difference of mean logs,
// exponentiated into a ratio interval. With a single candidate run the
// candidate's variance cannot be estimated, so the baseline's run-to-run
// spread is assumed for it (a prediction interval, df = n_base-1).
func WelchLog(base, cand LogMoments, confidence float64) (RatioCI, error) {
	if base.N < 2 {
		return RatioCI{}, fmt.Errorf("baseline has %d run(s): a confidence interval needs at least 2", base.N)
	}
	if cand.N < 1 {
		return RatioCI{}, errors.New("no candidate runs")
	}
	if !(confidence > 0 && confidence < 1) {
		return RatioCI{}, fmt.Errorf("confidence %v is not in (0,1)", confidence)
	}
	vb := base.SD * base.SD / float64(base.N)
	var se, df float64
	method := "welch-log"
	if cand.N < 2 {
		se = base.SD * math.Sqrt(1/float64(base.N)+1/float64(cand.N))
		df = float64(base.N - 1)
		method = "welch-log (candidate spread taken from baseline)"
	} else {
		vc := cand.SD * cand.SD / float64(cand.N)
		se = math.Sqrt(vb + vc)
		if vb+vc > 0 {
			df = (vb + vc) * (vb + vc) /
				(vb*vb/float64(base.N-1) + vc*vc/float64(cand.N-1))
		} else {
			df = float64(base.N + cand.N - 2)
		}
	}
	return logRatioCI(cand.Mean-base.Mean, se, df, confidence, method), nil
}

// logRatioCI is the ratio interval of a difference of mean logs diff
// with standard error se on df degrees of freedom, and its minimum
// detectable change: the shift whose test reaches the two-sided level
// with 80% power, (t_{1-a/2} + t_{0.8}) * SE.
func logRatioCI(diff, se, df, confidence float64, method string) RatioCI {
	tq := TQuantile(1-(1-confidence)/2, df)
	return RatioCI{
		Ratio:      math.Exp(diff),
		Low:        math.Exp(diff - tq*se),
		High:       math.Exp(diff + tq*se),
		Confidence: confidence,
		LogDiff:    diff,
		SE:         se,
		DF:         df,
		Method:     method,
		MDC:        math.Expm1((tq + TQuantile(0.8, df)) * se),
	}
}

// WithDF is r with its interval, p-values and MDC taken on df degrees of
// freedom instead.
func (r RatioCI) WithDF(df float64) RatioCI {
	return logRatioCI(r.LogDiff, r.SE, df, r.Confidence, r.Method)
}
