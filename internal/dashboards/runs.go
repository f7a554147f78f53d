package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

// runs: one row per testid with exact whole-run figures, then the
// per-stage view of arrival-rate tests.
func runs(b *board, o Options) {
	reqs, dur := catalogue.HTTPReqs, catalogue.HTTPReqDuration

	b.row("Runs")
	_, tpHi := throughputBand()
	p95Alert, p99Alert := latencyThreshold(0.95), latencyThreshold(0.99)
	t := b.table(24, 10, panelSpec{
		Title: "Runs compared",
		Desc: "One row per testid, exact over each run from its start to the end of the range: requests and failures from the cumulative counters, " +
			"p50/p95/p99 from the cumulative histogram (not averaged over windows), RPS over the run's active time (first to last scrape that saw the counter grow, to within one scrape interval), " +
			"p95/p99 as a share of the latency alert's threshold (the band's top raised by the latency tolerance: red from 100%, where the alert fires), and RPS as a share of the top of the throughput band.",
		Unit: units.Seconds,
		Targets: []target{
			{Expr: exact(reqs, byTestID), Instant: true, Table: true},
			{Expr: runRPS(), Instant: true, Table: true},
			{Expr: errorRatio(byTestID, runWindow), Instant: true, Table: true},
			{Expr: quantile(0.50, dur, byTestID, runWindow), Instant: true, Table: true},
			{Expr: quantile(0.95, dur, byTestID, runWindow), Instant: true, Table: true},
			{Expr: quantile(0.99, dur, byTestID, runWindow), Instant: true, Table: true},
			{Expr: fmt.Sprintf("(%s) / scalar(%s)", quantile(0.95, dur, byTestID, runWindow), p95Alert), Instant: true, Table: true},
			{Expr: fmt.Sprintf("(%s) / scalar(%s)", quantile(0.99, dur, byTestID, runWindow), p99Alert), Instant: true, Table: true},
			{Expr: fmt.Sprintf("(%s) / scalar(%s)", runRPS(), tpHi), Instant: true, Table: true},
		},
	}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(organizeColumns(map[string]string{
			"testid": "Test ID", "Value #A": "Requests", "Value #B": "RPS", "Value #C": "Failed",
			"Value #D": "p50", "Value #E": "p95", "Value #F": "p99",
			"Value #G": "p95 / alert threshold", "Value #H": "p99 / alert threshold", "Value #I": "RPS / band max",
		}, []string{"testid", "Value #A", "Value #B", "Value #C", "Value #D", "Value #E", "Value #F", "Value #G", "Value #H", "Value #I"})).
		OverrideByName("Requests", []dashboard.DynamicConfigValue{{Id: "unit", Value: units.Short}, {Id: "decimals", Value: 0}}).
		OverrideByName("RPS", []dashboard.DynamicConfigValue{{Id: "unit", Value: units.RequestsPerSecond}}).
		OverrideByName("Failed", []dashboard.DynamicConfigValue{{Id: "unit", Value: units.PercentUnit}})
	for _, c := range []string{"p95 / alert threshold", "p99 / alert threshold"} {
		t.OverrideByName(c, []dashboard.DynamicConfigValue{
			{Id: "unit", Value: units.PercentUnit},
			{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background", "mode": "basic"}},
			{Id: "thresholds", Value: map[string]any{"mode": "absolute", "steps": []map[string]any{
				{"value": nil, "color": "green"}, {"value": 1, "color": "red"}}}},
		})
	}
	t.OverrideByName("RPS / band max", []dashboard.DynamicConfigValue{{Id: "unit", Value: units.PercentUnit}})

	b.row("Stages (arrival-rate tests)")
	b.timeseries(12, 8, panelSpec{
		Title: "Arrival rate and throughput by scenario",
		Desc:  "Iterations started per second (the arrival rate an arrival-rate executor targets) next to completed requests per second, per scenario. A widening gap as the stages step up marks where the system stopped keeping up.",
		Unit:  "iters/s",
		Targets: []target{
			{Expr: rate(catalogue.Iterations, []string{"scenario"}), Legend: "{{scenario}} iterations/s"},
			{Expr: rate(reqs, []string{"scenario"}), Legend: "{{scenario}} requests/s"},
		},
	}).OverrideByRegexp(".*requests/s$", []dashboard.DynamicConfigValue{{Id: "unit", Value: units.RequestsPerSecond}})
	b.timeseries(12, 8, panelSpec{
		Title:   "Dropped iterations by scenario",
		Desc:    "Iterations an arrival-rate executor could not start because every allocated VU was busy: the load generator, not the target, set the pace during these stages.",
		Unit:    "iters/s",
		Targets: []target{{Expr: rate(catalogue.DroppedIterations, []string{"scenario"}), Legend: "{{scenario}}"}},
	})
	b.timeseries(12, 8, panelSpec{
		Title:   "p95 latency by scenario",
		Desc:    "p95 of http_req_duration per scenario over the dashboard's rate interval; read it stage by stage against the arrival rate above.",
		Unit:    units.Seconds,
		Targets: []target{{Expr: quantile(0.95, dur, []string{"scenario"}, "$__rate_interval"), Legend: "{{scenario}}"}},
	})
	b.timeseries(12, 8, panelSpec{
		Title: "VUs active against allocated",
		Desc:  "Active against allocated VUs per testid: under an arrival-rate executor, active approaching allocated means the next stage will drop iterations.",
		Unit:  units.Short,
		Targets: []target{
			{Expr: fmt.Sprintf("sum by (testid) (%s)", sel(catalogue.VUs)), Legend: "{{testid}} active"},
			{Expr: fmt.Sprintf("sum by (testid) (%s)", sel(catalogue.VUsMax)), Legend: "{{testid}} allocated"},
		},
	})
	b.table(24, 8, panelSpec{
		Title: "Per-stage statistics",
		Desc: "Exact per-stage figures for tests whose requests carry a stage tag (k6-jslib-utils tagWithCurrentStageIndex, allowed with --k6.allow-tag=stage): " +
			"requests, failed ratio and p95 per testid and stage from the cumulative series. Empty when requests carry no stage tag.",
		Unit: units.Seconds,
		Targets: []target{
			{Expr: exact(reqs, []string{"testid", "stage"}, `stage!=""`), Instant: true, Table: true},
			{Expr: errorRatio([]string{"testid", "stage"}, runWindow, `stage!=""`), Instant: true, Table: true},
			{Expr: quantile(0.95, dur, []string{"testid", "stage"}, runWindow, `stage!=""`), Instant: true, Table: true},
		},
	}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(organizeColumns(map[string]string{
			"testid": "Test ID", "stage": "Stage", "Value #A": "Requests", "Value #B": "Failed", "Value #C": "p95",
		}, []string{"testid", "stage", "Value #A", "Value #B", "Value #C"})).
		OverrideByName("Requests", []dashboard.DynamicConfigValue{{Id: "unit", Value: units.Short}, {Id: "decimals", Value: 0}}).
		OverrideByName("Failed", []dashboard.DynamicConfigValue{{Id: "unit", Value: units.PercentUnit}})
}

// runRPS is each run's requests over its active time. The active time
// runs from the first to the last runStep at which the request counter
// had grown since the step before, so it is exact to about one scrape
// interval at each end; requests, errors and quantiles are exact.
func runRPS() string {
	grow := fmt.Sprintf("(timestamp(sum by (testid) (%[1]s) - sum by (testid) (%[1]s offset %[2]s) > 0))", sel(catalogue.HTTPReqs), runStep)
	active := fmt.Sprintf("(max_over_time(%[1]s[$__range:%[2]s]) - min_over_time(%[1]s[$__range:%[2]s]) + %[3]d)", grow, runStep, runStepSeconds)
	return fmt.Sprintf("%s / %s", exact(catalogue.HTTPReqs, byTestID), active)
}

// runStep is the resolution of the active-time search; shorter than any
// sensible scrape interval, so it never skips a growing scrape.
const (
	runStep        = "5s"
	runStepSeconds = 5
)
