package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/rules"
)

// Colours of the envelope thresholds. A panel turns red only where the
// generated alerts fire; a band edge is a neutral marker, since half the
// runs of a steady test land beyond one edge or the other of a band drawn
// from a handful of runs.
const (
	alertColor  = "red"
	insideColor = "green"
	// bandColor is Grafana's text colour: readable in both themes and
	// neither good nor bad.
	bandColor = "text"
)

// limits are the envelope's alert thresholds, as the rules pack
// calibrates them (rules.Calibrate), beside the band edges they are
// built on; nil without an envelope.
type limits struct {
	cal *rules.Calibration
}

// newLimits calibrates env exactly as the rules generator does, so a
// panel's red step sits where the alert fires. An envelope the rules
// refuse has no alerts to draw, and is refused here too.
func newLimits(env *envelope.Envelope) (*limits, error) {
	if env == nil {
		return nil, nil
	}
	c, err := rules.Calibrate(env)
	if err != nil {
		return nil, fmt.Errorf("dashboard thresholds are the alert rules' thresholds: %w", err)
	}
	return &limits{cal: c}, nil
}

// throughput is the throughput alert's floor over its calibrated window
// and the bottom of the throughput band, in req/s; ok is false without
// an envelope.
func (l *limits) throughput() (floor, bandMin float64, ok bool) {
	if l == nil {
		return 0, 0, false
	}
	return l.cal.Throughput.Floor, l.cal.Throughput.Min, true
}

// latency is the overall latency alert's threshold of quantile q and the
// top of its band, in seconds; ok is false when no alert tests q (no
// envelope, or too few baseline requests to estimate it).
func (l *limits) latency(q float64) (threshold, bandMax float64, ok bool) {
	if l == nil {
		return 0, 0, false
	}
	for _, b := range l.cal.Latency {
		if b.Quantile == q {
			return b.Threshold, envelope.Seconds(b.BandMax), true
		}
	}
	return 0, 0, false
}

// anyFailure is the error ratio panels turn red at when any failed
// request alerts: the smallest ratio above zero a panel shows.
const anyFailure = 1e-9

// errorRatio is the failed-request ratio at which the error alert fires:
// the calibrated allowed ratio, or any failure when the envelope holds
// none, and without an envelope.
func (l *limits) errorRatio() float64 {
	if l == nil || l.cal.Errors.Zero {
		return anyFailure
	}
	return l.cal.Errors.Ratio
}

// The two kinds of panel the thresholds colour: a stat colours its value
// by the step it falls in; a time series draws each step as a line.
const (
	statPanel   = true
	seriesPanel = false
)

// floorThresholds colour a figure that must stay high (throughput). On a
// stat: red below the alert floor, neutral from the floor to the band's
// bottom, green from the band's bottom up. On a time series: a red line
// at the floor, a neutral one at the band's bottom.
func floorThresholds(floor, bandMin float64, stat bool) *dashboard.ThresholdsConfigBuilder {
	hasBand := bandMin > floor
	switch {
	case !stat && hasBand:
		return thresholds("transparent", at(floor, alertColor), at(bandMin, bandColor))
	case !stat:
		return thresholds("transparent", at(floor, alertColor))
	case hasBand:
		return thresholds(alertColor, at(floor, bandColor), at(bandMin, insideColor))
	}
	return thresholds(alertColor, at(floor, insideColor))
}

// ceilingThresholds colour a figure that must stay low (latency, errors).
// On a stat: green up to the band's top, neutral from there to the alert
// threshold, red from the threshold up. On a time series: a neutral line
// at the band's top, a red one at the threshold. A band top at or above
// the threshold (no tolerance) is left out: the threshold marks both.
func ceilingThresholds(threshold, bandMax float64, stat bool) *dashboard.ThresholdsConfigBuilder {
	steps := []step{at(threshold, alertColor)}
	if bandMax > 0 && bandMax < threshold {
		steps = append(steps, at(bandMax, bandColor))
	}
	if stat {
		return thresholds(insideColor, steps...)
	}
	return thresholds("transparent", steps...)
}
