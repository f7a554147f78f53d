package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/rules"
)

var byTestID = []string{"testid"}

// overview: the test against its envelope at a glance, one row after
// another.
func overview(b *board, o Options) {
	for _, row := range []func(*board, Options){overviewNow, overviewThroughput, overviewErrorsAndLoad, overviewLatency, overviewChecks, overviewAlerts} {
		row(b, o)
	}
}

// overviewNow: the headline stats.
func overviewNow(b *board, o Options) {
	reqs := catalogue.HTTPReqs
	b.row("Now")
	tp := b.stat(4, 4, "lastNotNull", panelSpec{
		Title:   "Throughput",
		Desc:    "HTTP requests per second over all selected tests and scenarios (k6 http_reqs), summed across k6 instances and exporters.",
		Unit:    units.RequestsPerSecond,
		Targets: []target{{Expr: rate(reqs, nil), Legend: "req/s"}},
	})
	if floor, bandMin, ok := o.limits.throughput(); ok {
		tp.Thresholds(floorThresholds(floor, bandMin, statPanel))
	}
	b.stat(4, 4, "lastNotNull", panelSpec{
		Title:   "Error ratio",
		Desc:    "Failed requests over all requests (http_req_failed), from summed counters. Red at the ratio the error alert fires at: any failure when the envelope holds zero errors.",
		Unit:    units.PercentUnit,
		Targets: []target{{Expr: errorRatio(nil, "$__rate_interval"), Legend: "failed"}},
	}).Thresholds(ceilingThresholds(o.limits.errorRatio(), 0, statPanel)).Decimals(3)
	p95 := b.stat(4, 4, "lastNotNull", panelSpec{
		Title:   "p95 latency",
		Desc:    "95th percentile of http_req_duration from the summed native histogram rate (classic buckets as fallback); never an average of per-series quantiles.",
		Unit:    units.Seconds,
		Targets: []target{{Expr: quantile(0.95, catalogue.HTTPReqDuration, nil, "$__rate_interval"), Legend: "p95"}},
	})
	if threshold, bandMax, ok := o.limits.latency(0.95); ok {
		p95.Thresholds(ceilingThresholds(threshold, bandMax, statPanel))
	}
	b.stat(4, 4, "lastNotNull", panelSpec{
		Title:   "VUs",
		Desc:    "Active k6 virtual users, summed over k6 instances.",
		Unit:    units.Short,
		Targets: []target{{Expr: fmt.Sprintf("sum (%s)", sel(catalogue.VUs)), Legend: "VUs"}},
	})
	b.stat(4, 4, "lastNotNull", panelSpec{
		Title:   "Requests",
		Desc:    "Requests made by the selected tests, exact: the cumulative request counters at the end of the time range, summed. Covers each run from its start.",
		Unit:    units.Short,
		Targets: []target{{Expr: exact(reqs, nil), Legend: "requests", Instant: true}},
	}).GraphMode(common.BigValueGraphModeNone)
	b.stat(4, 4, "lastNotNull", panelSpec{
		Title:   "Envelope alerts firing",
		Desc:    "Envelope alerts firing now (ALERTS from the generated rules). 0 means the test is inside its envelope.",
		Unit:    units.Short,
		Targets: []target{{Expr: fmt.Sprintf("count (%s) or vector(0)", firingAlerts()), Legend: "firing"}},
	}).Thresholds(thresholds("green", at(1.0, "red")))
}

// overviewThroughput: throughput against its band, and the iteration rate.
func overviewThroughput(b *board, o Options) {
	reqs := catalogue.HTTPReqs
	b.row("Throughput")
	tpLo, tpHi := throughputBand()
	p := b.timeseries(12, 9, panelSpec{
		Title: "Throughput against the envelope band",
		Desc:  "Request rate per testid. The shaded corridor is the envelope's throughput band (lowest to highest baseline run), from the exporter's envelope gauges; staying above the lower edge is the goal.",
		Unit:  units.RequestsPerSecond,
		Targets: withBand(
			[]target{{Expr: rate(reqs, byTestID), Legend: "{{testid}}"}},
			tpLo, tpHi),
	})
	bandOverrides(p, bandLower, bandUpper, "green")
	if floor, bandMin, ok := o.limits.throughput(); ok {
		p.Thresholds(floorThresholds(floor, bandMin, seriesPanel)).ThresholdsStyle(lineThresholds())
	}
	b.timeseries(12, 9, panelSpec{
		Title: "Iteration rate",
		Desc:  "Completed iterations per second per testid, and iterations k6 could not start (dropped: an arrival-rate executor ran out of VUs, a sign the system under test or the load generator saturated).",
		Unit:  "iters/s",
		Targets: []target{
			{Expr: rate(catalogue.Iterations, byTestID), Legend: "{{testid}} completed"},
			{Expr: rate(catalogue.DroppedIterations, byTestID), Legend: "{{testid}} dropped"},
		},
	})
}

// overviewErrorsAndLoad: the error ratio, the VUs and the throughput CV.
func overviewErrorsAndLoad(b *board, o Options) {
	b.row("Errors and load")
	er := b.timeseries(8, 8, panelSpec{
		Title: "Error ratio",
		Desc:  "Failed requests over all requests per testid (http_req_failed), from summed counters, never an average of ratios, against the envelope's error budget (0 when the baseline had no errors: any failure alerts).",
		Unit:  units.PercentUnit,
		Targets: []target{
			{Expr: errorRatio(byTestID, "$__rate_interval"), Legend: "{{testid}}"},
			{Expr: errorBudget(), Legend: "error budget"},
		},
	})
	er.Thresholds(ceilingThresholds(o.limits.errorRatio(), 0, seriesPanel)).ThresholdsStyle(lineThresholds())
	fixedColor(er, "error budget", "red")
	b.timeseries(8, 8, panelSpec{
		Title: "Virtual users",
		Desc:  "Active and allocated k6 VUs per testid, summed over k6 instances.",
		Unit:  units.Short,
		Targets: []target{
			{Expr: fmt.Sprintf("sum by (testid) (%s)", sel(catalogue.VUs)), Legend: "{{testid}} active"},
			{Expr: fmt.Sprintf("sum by (testid) (%s)", sel(catalogue.VUsMax)), Legend: "{{testid}} allocated"},
		},
	})
	cv := b.timeseries(8, 8, panelSpec{
		Title: "Throughput CV (alert view)",
		Desc:  "Coefficient of variation of the 1m request rate over 10m, as the recording rule computes it for the CV alert, against the envelope's CV bound.",
		Unit:  units.PercentUnit,
		Targets: []target{
			{Expr: fmt.Sprintf(`%s{envelope="$envelope", testid=~"$testid"}`, catalogue.RecThroughputCV), Legend: "{{testid}}"},
			{Expr: cvBound(), Legend: "CV bound"},
		},
	})
	fixedColor(cv, "CV bound", "red")
}

// overviewLatency: p50, p95 and p99 against their bands.
func overviewLatency(b *board, o Options) {
	b.row("Latency")
	for _, q := range []struct {
		q    float64
		name string
	}{{rules.MedianQuantile, "p50"}, {0.95, "p95"}, {0.99, "p99"}} {
		lo, hi := latencyBand(q.q)
		p := b.timeseries(8, 9, panelSpec{
			Title: q.name + " latency against the envelope band",
			Desc: fmt.Sprintf("%s of http_req_duration per testid from histogram_quantile over the summed native histogram rate (classic buckets as fallback). The corridor is the envelope's %s band across baseline runs.",
				q.name, q.name),
			Unit: units.Seconds,
			Targets: withBand(
				[]target{{Expr: quantile(q.q, catalogue.HTTPReqDuration, byTestID, "$__rate_interval"), Legend: "{{testid}}"}},
				lo, hi),
		})
		bandOverrides(p, bandLower, bandUpper, "green")
		if threshold, bandMax, ok := o.limits.latency(q.q); ok {
			p.Thresholds(ceilingThresholds(threshold, bandMax, seriesPanel)).ThresholdsStyle(lineThresholds())
		}
	}
}

// overviewChecks: checks and data transfer.
func overviewChecks(b *board, o Options) {
	b.row("Checks and transfer")
	checks := catalogue.Checks
	b.table(12, 8, panelSpec{
		Title: "Checks",
		Desc:  "k6 checks per check name, exact over each run from its start to the end of the range: passes, failures and pass ratio from the cumulative check counters (condition nonzero = passed), never an average of rates.",
		Unit:  units.Short,
		Targets: []target{
			{Expr: exact(checks, []string{"check"}, catalogue.NonzeroMatcher), Instant: true, Table: true},
			{Expr: exact(checks, []string{"check"}, catalogue.ZeroMatcher), Instant: true, Table: true},
			{Expr: fmt.Sprintf("%s / %s", exact(checks, []string{"check"}, catalogue.NonzeroMatcher), exact(checks, []string{"check"})), Instant: true, Table: true},
		},
	}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(organizeColumns(map[string]string{
			"check": "Check", "Value #A": "Passes", "Value #B": "Failures", "Value #C": "Pass ratio",
		}, []string{"check", "Value #A", "Value #B", "Value #C"})).
		OverrideByName("Pass ratio", []dashboard.DynamicConfigValue{
			{Id: "unit", Value: units.PercentUnit},
			{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background", "mode": "basic"}},
			{Id: "thresholds", Value: map[string]any{"mode": "absolute", "steps": []map[string]any{
				{"value": nil, "color": "red"}, {"value": 1, "color": "green"}}}},
		})
	b.timeseries(12, 8, panelSpec{
		Title: "Data transfer",
		Desc:  "Bytes per second k6 sent and received per testid (data_sent, data_received): a drop at the same request rate means smaller responses, often error pages.",
		Unit:  "Bps",
		Targets: []target{
			{Expr: rate(catalogue.DataSent, byTestID), Legend: "{{testid}} sent"},
			{Expr: rate(catalogue.DataReceived, byTestID), Legend: "{{testid}} received"},
		},
	})
}

// overviewAlerts: firing alerts and the distance to the envelope.
func overviewAlerts(b *board, o Options) {
	b.row("Alerts")
	b.table(12, 8, panelSpec{
		Title:   "Firing envelope alerts",
		Desc:    "Envelope alerts firing at the end of the time range, one row per alert and label set. Each links to its runbook through the alert's runbook_url.",
		Unit:    units.Short,
		Targets: []target{{Expr: firingAlerts(), Instant: true, Table: true}},
	}).WithTransformation(dashboard.DataTransformerConfig{
		Id: "organize",
		Options: map[string]any{
			"excludeByName": map[string]any{"Time": true, "Value": true, "__name__": true, "alertstate": true},
		},
	})
	r := b.timeseries(12, 8, panelSpec{
		Title: "Distance to the envelope (alert view)",
		Desc:  "Recorded ratios the saturation alerts read: throughput over the envelope mean, and p95 over the top of the envelope's p95 band. 100% is at the envelope.",
		Unit:  units.PercentUnit,
		Targets: []target{
			{Expr: fmt.Sprintf(`%s{envelope="$envelope", testid=~"$testid"}`, catalogue.RecThroughputVsEnvelope), Legend: "{{testid}} throughput / mean"},
			{Expr: fmt.Sprintf(`%s{envelope="$envelope", testid=~"$testid"}`, catalogue.RecLatencyP95VsEnvelope), Legend: "{{testid}} p95 / band max"},
		},
	})
	// 100% is the envelope itself (its mean throughput, the top of its p95
	// band): a neutral line, since the alerts fire further out.
	r.Thresholds(thresholds("transparent", at(1.0, bandColor))).ThresholdsStyle(lineThresholds())
}

// Band series names, styled by bandOverrides.
const (
	bandLower = "band min"
	bandUpper = "band max"
)

// withBand appends the band's lower and upper queries to ts.
func withBand(ts []target, lower, upper string) []target {
	if lower == "" || upper == "" {
		return ts
	}
	return append(ts, target{Expr: lower, Legend: bandLower}, target{Expr: upper, Legend: bandUpper})
}

// lineThresholds draws thresholds as lines on a time series.
func lineThresholds() *common.GraphThresholdsStyleConfigBuilder {
	return common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeLine)
}
