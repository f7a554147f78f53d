package dashboards

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

var byEndpoint = []string{endpointLabel}

// endpoints: per-endpoint rates, errors and latency against the
// per-endpoint bands, with the latency distribution as a heatmap.
func endpoints(b *board, o Options) {
	reqs, dur := catalogue.HTTPReqs, catalogue.HTTPReqDuration

	b.row("Traffic")
	p := b.timeseries(12, 8, panelSpec{
		Title:   "Request rate by endpoint",
		Desc:    "Requests per second per endpoint (k6 name tag), summed over tests, scenarios and k6 instances. The mix should match the envelope's request mix.",
		Unit:    units.RequestsPerSecond,
		Targets: []target{{Expr: rate(reqs, byEndpoint, endpointMatcher), Legend: "{{name}}"}},
	})
	labelSeries(p, o)
	p = b.timeseries(12, 8, panelSpec{
		Title:   "Error ratio by endpoint",
		Desc:    "Failed over all requests per endpoint (http_req_failed), from summed counters.",
		Unit:    units.PercentUnit,
		Targets: []target{{Expr: errorRatio(byEndpoint, "$__rate_interval", endpointMatcher), Legend: "{{name}}"}},
	}).Thresholds(ceilingThresholds(o.limits.errorRatio(), 0, seriesPanel)).ThresholdsStyle(lineThresholds())
	labelSeries(p, o)

	b.row("Latency")
	for _, q := range []struct {
		q    float64
		name string
	}{{0.95, "p95"}, {0.99, "p99"}} {
		lo, hi := endpointBand(q.q)
		p := b.timeseries(12, 9, panelSpec{
			Title: q.name + " latency by endpoint against its band",
			Desc: fmt.Sprintf("%s of http_req_duration per endpoint from histogram_quantile over summed rates. Dashed lines are each endpoint's envelope %s band (min and max across baseline runs) from the exporter's envelope gauges.",
				q.name, q.name),
			Unit: units.Seconds,
			Targets: []target{
				{Expr: quantile(q.q, dur, byEndpoint, "$__rate_interval", endpointMatcher), Legend: "{{name}}"},
				{Expr: lo, Legend: "{{name}} band min"},
				{Expr: hi, Legend: "{{name}} band max"},
			},
		})
		p.OverrideByRegexp(".* band (min|max)$", []dashboard.DynamicConfigValue{
			{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
			{Id: "custom.fillOpacity", Value: 0},
		})
		labelSeries(p, o, " band min", " band max")
	}
	p = b.timeseries(12, 8, panelSpec{
		Title:   "Median latency by endpoint",
		Desc:    "p50 of http_req_duration per endpoint from histogram_quantile over summed rates.",
		Unit:    units.Seconds,
		Targets: []target{{Expr: quantile(0.5, dur, byEndpoint, "$__rate_interval", endpointMatcher), Legend: "{{name}}"}},
	})
	labelSeries(p, o)
	p = b.timeseries(12, 8, panelSpec{
		Title:   "Mean latency by endpoint",
		Desc:    "Mean http_req_duration per endpoint: histogram sum over count of summed rates. Compare with the median: a mean far above it means a heavy tail.",
		Unit:    units.Seconds,
		Targets: []target{{Expr: mean(dur, byEndpoint, "$__rate_interval", endpointMatcher), Legend: "{{name}}"}},
	})
	labelSeries(p, o)

	b.row("Request phases")
	phases := b.timeseries(12, 9, panelSpec{
		Title: "p95 of each request phase",
		Desc: "p95 of k6's request phases (blocked, connecting, TLS handshaking, sending, waiting, receiving) from histogram_quantile over summed rates, per phase, never averaged. " +
			"Waiting (time to first byte) growing alone points at the server; connecting or TLS growing points at connection reuse or the network.",
		Unit:    units.Seconds,
		Targets: phaseTargets(),
	})
	phases.Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNone))
	b.timeseries(12, 9, panelSpec{
		Title: "Iteration duration",
		Desc:  "p50 and p95 of a whole k6 iteration (every request plus think time) per scenario: with a closed (VU) model, longer iterations mean fewer requests per second at the same VUs.",
		Unit:  units.Seconds,
		Targets: []target{
			{Expr: quantile(0.50, catalogue.IterationDuration, []string{"scenario"}, "$__rate_interval"), Legend: "{{scenario}} p50"},
			{Expr: quantile(0.95, catalogue.IterationDuration, []string{"scenario"}, "$__rate_interval"), Legend: "{{scenario}} p95"},
		},
	})

	b.row("Distribution")
	b.heatmap(12, 10, panelSpec{
		Title: "Latency heatmap (native histogram)",
		Desc:  "Distribution of http_req_duration for the selected endpoints from the native histogram's exponential buckets (requests per second in each bucket). A second band above the main one is a slow path or a timeout.",
		Unit:  units.Seconds,
		Targets: []target{{Expr: fmt.Sprintf("sum (rate(%s[$__rate_interval]))", sel(dur, endpointMatcher)),
			Heatmap: true}},
	})
	b.heatmap(12, 10, panelSpec{
		Title: "Latency heatmap (classic buckets at the band edges)",
		Desc:  "The same distribution from the classic buckets, whose bounds include the envelope's p95 and p99 band edges: the rows above a band's top edge hold exactly the requests slower than the band, the share the latency alerts count.",
		Unit:  units.Seconds,
		Targets: []target{{Expr: fmt.Sprintf("sum by (le) (rate(%s[$__rate_interval]))", selNamed(dur.Name+"_bucket", dur, endpointMatcher)),
			Legend: "{{le}}", Heatmap: true}},
	})
	endpointTable(b, o)

	trendPanels(b)
}

// endpointTable is the per-endpoint summary over each run, exact: the
// cumulative series at the end of the range.
func endpointTable(b *board, o Options) {
	reqs, dur := catalogue.HTTPReqs, catalogue.HTTPReqDuration
	_, hi95 := endpointBand(0.95)
	b.table(24, 9, panelSpec{
		Title: "Endpoints over the selected runs",
		Desc:  "Per endpoint, exact over each selected run from its start to the end of the range: requests, failed ratio, p50/p95/p99 from the cumulative histogram (not averaged), and the top of the envelope's p95 band.",
		Unit:  units.Seconds,
		Targets: []target{
			{Expr: exact(reqs, byEndpoint, endpointMatcher), Legend: "requests", Instant: true, Table: true},
			{Expr: errorRatio(byEndpoint, runWindow, endpointMatcher), Legend: "failed", Instant: true, Table: true},
			{Expr: quantile(0.50, dur, byEndpoint, runWindow, endpointMatcher), Legend: "p50", Instant: true, Table: true},
			{Expr: quantile(0.95, dur, byEndpoint, runWindow, endpointMatcher), Legend: "p95", Instant: true, Table: true},
			{Expr: quantile(0.99, dur, byEndpoint, runWindow, endpointMatcher), Legend: "p99", Instant: true, Table: true},
			{Expr: hi95, Legend: "p95 band max", Instant: true, Table: true},
		},
	}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(organizeColumns(map[string]string{
			"Value #A": "Requests", "Value #B": "Failed", "Value #C": "p50", "Value #D": "p95", "Value #E": "p99",
			"Value #F": "p95 band max", "name": "Endpoint",
		}, []string{"name", "Value #A", "Value #B", "Value #C", "Value #D", "Value #E", "Value #F"})).
		OverrideByName("Requests", []dashboard.DynamicConfigValue{{Id: "unit", Value: units.Short}}).
		OverrideByName("Failed", []dashboard.DynamicConfigValue{{Id: "unit", Value: units.PercentUnit}})
}

// organizeColumns renames and orders table columns and hides the
// timestamp, the series name and any extra columns named in hide.
func organizeColumns(rename map[string]string, order []string, hide ...string) dashboard.DataTransformerConfig {
	idx := map[string]any{}
	for i, c := range order {
		idx[c] = i
	}
	exclude := map[string]any{"Time": true, "__name__": true}
	for _, h := range hide {
		exclude[h] = true
	}
	return dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
		"excludeByName": exclude,
		"indexByName":   idx,
		"renameByName":  rename,
	}}
}

// phases are k6's built-in request phase trends, exposed as histograms
// under their catalogue.SeriesName.
var phases = []string{"http_req_blocked", "http_req_connecting", "http_req_tls_handshaking",
	"http_req_sending", "http_req_waiting", "http_req_receiving"}

func phaseDesc(k6Metric string) catalogue.Desc {
	return catalogue.Desc{Name: catalogue.SeriesName(k6Metric, "trend", "time"), Labels: catalogue.DefaultK6Labels()}
}

func phaseTargets() []target {
	var ts []target
	for _, p := range phases {
		ts = append(ts, target{
			Expr:   quantile(0.95, phaseDesc(p), nil, "$__rate_interval", endpointMatcher),
			Legend: strings.TrimPrefix(p, "http_req_"),
		})
	}
	return ts
}

// trendPanels repeats one panel per custom trend metric endpoint of the
// loaded envelope (the `trend` variable lists the envelope gauges'
// metric label), with the p95 and p99 against the envelope's bands.
func trendPanels(b *board) {
	b.row("Custom trend endpoints")
	lo95, hi95 := trendBand(0.95)
	lo99, hi99 := trendBand(0.99)
	d := catalogue.Desc{Name: "${" + varTrend + "}", Labels: catalogue.DefaultK6Labels()}
	p := b.timeseries(8, 9, panelSpec{
		Title: "$trend p95 and p99 against the bands",
		Desc: "A k6 custom trend metric that is an endpoint of the envelope (e.g. k6_actor_get_seconds): p95 and p99 from histogram_quantile over summed rates, " +
			"with the envelope's p95 and p99 bands dashed. One panel per value of the trend variable.",
		Unit: units.Seconds,
		Targets: []target{
			{Expr: trendQuantile(0.95, d), Legend: "{{testid}} p95"},
			{Expr: trendQuantile(0.99, d), Legend: "{{testid}} p99"},
			{Expr: lo95, Legend: "p95 band min"}, {Expr: hi95, Legend: "p95 band max"},
			{Expr: lo99, Legend: "p99 band min"}, {Expr: hi99, Legend: "p99 band max"},
		},
	})
	p.Repeat(varTrend).RepeatDirection(dashboard.PanelRepeatDirectionH).MaxPerRow(3)
	p.OverrideByRegexp(".* band (min|max)$", dashedLine())
}

// trendQuantile is quantile for a series named by the trend variable:
// the name goes into a __name__ matcher so the selector stays valid.
func trendQuantile(q float64, d catalogue.Desc) string {
	s := func(name string) string {
		return fmt.Sprintf(`{__name__=%q, testid=~"$testid", scenario=~"$scenario"}`, name)
	}
	return fmt.Sprintf("histogram_quantile(%s, sum by (testid) (rate(%s[$__rate_interval]))) or histogram_quantile(%s, sum by (testid, le) (rate(%s[$__rate_interval])))",
		ftoa(q), s(d.Name), ftoa(q), s(d.Name+"_bucket"))
}
