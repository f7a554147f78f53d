package dashboards

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

// Template variables every dashboard filters on. endpoint is the k6
// `name` tag, the label requests are grouped by per endpoint.
const (
	varTestID = "testid"
	// envelope picks one of the envelopes the exporters serve; testid
	// then lists the tests its rules matched.
	varEnvelope = "envelope"
	varScenario = "scenario"
	varEndpoint = "endpoint"
	// trend lists the custom trend metrics the loaded envelope bands.
	varTrend = "trend"

	endpointLabel = "name"
)

// sel renders a selector for d with the dashboard filters its labels
// allow (testid, scenario) plus extra matchers such as condition="nonzero".
func sel(d catalogue.Desc, extra ...string) string {
	return selNamed(d.Name, d, extra...)
}

// selNamed is sel for a series derived from d (e.g. d.Name+"_bucket").
func selNamed(name string, d catalogue.Desc, extra ...string) string {
	var m []string
	if slices.Contains(d.Labels, "testid") {
		m = append(m, `testid=~"$testid"`)
	}
	if slices.Contains(d.Labels, "scenario") {
		m = append(m, `scenario=~"$scenario"`)
	}
	m = append(m, extra...)
	if len(m) == 0 {
		return name
	}
	return name + "{" + strings.Join(m, ", ") + "}"
}

// endpointMatcher narrows per-endpoint panels to the endpoint variable.
const endpointMatcher = endpointLabel + `=~"$endpoint"`

// by renders a "by (...)" clause; empty labels give "".
func by(labels ...string) string {
	if len(labels) == 0 {
		return ""
	}
	return " by (" + strings.Join(labels, ", ") + ")"
}

// rate is sum by (labels) (rate(selector[$__rate_interval])).
func rate(d catalogue.Desc, groupBy []string, extra ...string) string {
	return fmt.Sprintf("sum%s (rate(%s[$__rate_interval]))", by(groupBy...), sel(d, extra...))
}

// exact is the exact number of events per group from each run's start
// to the end of the dashboard range: the last value of each cumulative
// series, summed. The exporter's counters and histograms start at zero
// with the run, so this is exact where increase() would extrapolate and
// miss what happened before the first scrape.
func exact(d catalogue.Desc, groupBy []string, extra ...string) string {
	return fmt.Sprintf("sum%s (last_over_time(%s[$__range]))", by(groupBy...), sel(d, extra...))
}

// errorRatio is failed/all http_req_failed samples: numerator and
// denominator are summed separately and then divided, never averaged.
func errorRatio(groupBy []string, window string, extra ...string) string {
	d := catalogue.HTTPReqFailed
	f := func(m ...string) string {
		return fmt.Sprintf("sum%s (%s(%s[%s]))", by(groupBy...), windowFunc(window), sel(d, append(m, extra...)...), window)
	}
	return fmt.Sprintf("%s / %s", f(catalogue.NonzeroMatcher), f())
}

// runWindow asks for whole-run figures: over $__range the cumulative
// series are read at their last value (see exact) instead of as a rate.
const runWindow = "$__range"

func windowFunc(window string) string {
	if window == runWindow {
		return "last_over_time"
	}
	return "rate"
}

// quantile is histogram_quantile over summed rates: the native histogram
// first, the classic buckets (kept by the exporter for Prometheus setups
// without native histograms) where no native series exists. Quantiles
// are never averaged across series or instances.
func quantile(q float64, d catalogue.Desc, groupBy []string, window string, extra ...string) string {
	fn := windowFunc(window)
	native := fmt.Sprintf("histogram_quantile(%s, sum%s (%s(%s[%s])))",
		ftoa(q), by(groupBy...), fn, sel(d, extra...), window)
	classic := fmt.Sprintf("histogram_quantile(%s, sum%s (%s(%s[%s])))",
		ftoa(q), by(append(slices.Clone(groupBy), "le")...), fn, selNamed(d.Name+"_bucket", d, extra...), window)
	return native + " or " + classic
}

// mean is the histogram mean (sum/count of the native histogram, classic
// _sum/_count as fallback).
func mean(d catalogue.Desc, groupBy []string, window string, extra ...string) string {
	fn := windowFunc(window)
	native := fmt.Sprintf("histogram_avg(sum%s (%s(%s[%s])))", by(groupBy...), fn, sel(d, extra...), window)
	classic := fmt.Sprintf("sum%s (%s(%s[%s])) / sum%s (%s(%s[%s]))",
		by(groupBy...), fn, selNamed(d.Name+"_sum", d, extra...), window,
		by(groupBy...), fn, selNamed(d.Name+"_count", d, extra...), window)
	return native + " or " + classic
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// labelValues is a variable query listing label values of a metric.
func labelValues(metric, label string) string {
	return fmt.Sprintf("label_values(%s, %s)", metric, label)
}
