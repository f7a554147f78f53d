package figures

import "math"

// DefaultConfidence is the confidence of every interval and judgement
// when none is set.
const DefaultConfidence = 0.95

// Confidence is c when it lies in (0,1), else DefaultConfidence.
func Confidence(c float64) float64 {
	if c > 0 && c < 1 {
		return c
	}
	return DefaultConfidence
}

// IntervalConfidence is the level of a run's own order-statistic
// intervals (Latency's MedianCI, P95CI, P99CI): a property of the run,
// the same whatever confidence a later judgement uses, which reads the
// standard error back from them.
const IntervalConfidence = 0.95

// Tolerance is the policy the rules and comparisons apply on top of an
// envelope's own spread.
type Tolerance struct {
	// Relative throughput drop below the band's min allowed before alerting.
	ThroughputDrop float64 `json:"throughput_drop" yaml:"throughput_drop"`
	// Relative latency rise above a band's max allowed before alerting.
	LatencyRise float64 `json:"latency_rise" yaml:"latency_rise"`
	// Error ratio allowed; 0 means any failed request alerts.
	ErrorRatio float64 `json:"error_ratio" yaml:"error_ratio"`
	// Upper bound on the throughput CV over the alert window.
	MaxCV float64 `json:"max_cv,omitempty" yaml:"max_cv,omitempty"`
	// Rate window of the alert expressions (Go/Prometheus duration).
	Window string `json:"window" yaml:"window"`
	// Target false-alarm probability per evaluation for the calibrated bounds.
	FalseAlarm float64 `json:"false_alarm" yaml:"false_alarm"`
	// Confidence for comparisons.
	Confidence float64 `json:"confidence" yaml:"confidence"`
}

// DefaultTolerance is the policy written when none is given.
func DefaultTolerance() Tolerance {
	return Tolerance{
		ThroughputDrop: 0.05,
		LatencyRise:    0.10,
		ErrorRatio:     0,
		Window:         "5m",
		FalseAlarm:     0.001,
		Confidence:     DefaultConfidence,
	}
}

// Latency is the latency rise allowed: LatencyRise, or the default's
// when unset.
func (t Tolerance) Latency() float64 {
	if t.LatencyRise > 0 {
		return t.LatencyRise
	}
	return DefaultTolerance().LatencyRise
}

// Relative is the relative change of figure n the tolerance allows: a
// throughput drop for the rates, a rise for every other figure; ok is
// false for the error rate, whose allowance (ErrorRatio) is absolute.
func (t Tolerance) Relative(n Name) (tol float64, ok bool) {
	switch {
	case n == ErrorRate:
		return 0, false
	case n.Def().Polarity == LowerIsWorse:
		return t.ThroughputDrop, true
	}
	return t.LatencyRise, true
}

// TailMinBeyond is how many of a run's requests must lie beyond a
// percentile for the run to estimate it: a percentile q of n requests
// rests on about n·(1−q) requests above it, and with fewer than this
// the estimate is one of the few slowest requests rather than a tail.
const TailMinBeyond = 10

// RequestsNeeded is the fewest requests a run needs for the figure to
// be estimated from it: TailMinBeyond/(1−q) for a percentile q (20 for
// the median, 200 for p95, 1,000 for p99), 0 for any other figure.
func (d Def) RequestsNeeded() int64 {
	if d.Quantile <= 0 || d.Quantile >= 1 {
		return 0
	}
	return int64(math.Ceil(TailMinBeyond/(1-d.Quantile) - 1e-9))
}

// Supported says whether a run of count requests estimates the figure:
// always for a figure that is not a percentile, and for a percentile
// when count reaches RequestsNeeded. A figure a run does not support is
// shown, marked, and never judged (compare, alert rules, change points).
func (d Def) Supported(count int64) bool { return count >= d.RequestsNeeded() }
