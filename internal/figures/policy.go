package figures

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
