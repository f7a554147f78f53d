package dashboards

import (
	"fmt"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

// Envelope bands, read from the exporter's envelope gauges so that the
// dashboards draw whichever envelope the exporter was started with. Each
// returns PromQL for the lower and upper edge; max() collapses the
// gauges of several exporters serving the same envelope into one line.

func throughputBand() (string, string) {
	return fmt.Sprintf("max(%s{%s})", catalogue.EnvelopeThroughputMin.Name, envelopeMatcher),
		fmt.Sprintf("max(%s{%s})", catalogue.EnvelopeThroughputMax.Name, envelopeMatcher)
}

// envelopeMatcher narrows envelope gauges and recorded series to the
// envelope the dashboard shows: an exporter may serve several, and the
// rules of several record side by side.
const envelopeMatcher = `envelope="$envelope"`

// percentileLabel is the envelope gauges' percentile label value.
func percentileLabel(q float64) string { return ftoa(q * 100) }

// latencyBand is the overall http_req_duration band of one percentile
// (0.5, 0.95 or 0.99): the gauges without an endpoint.
func latencyBand(q float64) (string, string) {
	m := overallLatency(q)
	return fmt.Sprintf("max(%s%s)", catalogue.EnvelopeLatencyMin.Name, m),
		fmt.Sprintf("max(%s%s)", catalogue.EnvelopeLatencyMax.Name, m)
}

// latencyThreshold is the overall latency alert's threshold of one
// percentile: the band's top raised by the latency tolerance, the bucket
// bound the generated alert reads (the exporter and the rules both take
// it from envelope.Threshold).
func latencyThreshold(q float64) string {
	return fmt.Sprintf("max(%s%s)", catalogue.EnvelopeLatencyThreshold.Name, overallLatency(q))
}

// overallLatency matches the envelope gauges of one percentile of
// http_req_duration over all endpoints.
func overallLatency(q float64) string {
	return fmt.Sprintf(`{%s, metric=%q, endpoint="", percentile=%q}`, envelopeMatcher, catalogue.HTTPReqDuration.Name, percentileLabel(q))
}

// endpointBand is the band of one percentile per endpoint whose envelope
// entry selects http_req_duration by the k6 name tag, relabelled to
// `name` so it lines up with the endpoint's own series.
func endpointBand(q float64) (string, string) {
	f := func(d catalogue.Desc) string {
		return fmt.Sprintf(`label_replace(max by (value) (%s{%s, tag=%q, value=~"$endpoint", percentile=%q}), %q, "$1", "value", "(.*)")`,
			d.Name, envelopeMatcher, endpointLabel, percentileLabel(q), endpointLabel)
	}
	return f(catalogue.EnvelopeLatencyMin), f(catalogue.EnvelopeLatencyMax)
}

// trendBand is the band of one percentile of a custom trend metric
// endpoint, selected by the `trend` variable.
func trendBand(q float64) (string, string) {
	m := fmt.Sprintf(`{%s, metric="$trend", percentile=%q}`, envelopeMatcher, percentileLabel(q))
	return fmt.Sprintf("max(%s%s)", catalogue.EnvelopeLatencyMin.Name, m),
		fmt.Sprintf("max(%s%s)", catalogue.EnvelopeLatencyMax.Name, m)
}

func cvBound() string {
	return fmt.Sprintf("max(%s{%s})", catalogue.EnvelopeThroughputCVMax.Name, envelopeMatcher)
}

func errorBudget() string {
	return fmt.Sprintf("max(%s{%s})", catalogue.EnvelopeErrorBudget.Name, envelopeMatcher)
}

// alertNames matches the names of the generated alerts (internal/rules:
// K6Envelope* for the k6 envelope, ECS* for the service on ECS); a test
// checks every generated alert against it.
const alertNames = "K6Envelope.+|ECS.+"

// firingAlerts selects the envelope alerts that are firing.
func firingAlerts() string {
	return fmt.Sprintf(`ALERTS{alertstate="firing", alertname=~%q, %s}`, alertNames, envelopeMatcher)
}
