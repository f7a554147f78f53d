package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/units"

	c "github.com/envelope-dev/envelope/internal/catalogue"
)

// Prometheus's own per-target series: not exporter metrics, so not in the
// catalogue, but every scrape produces them.
const (
	promUp             = "up"
	promScrapeDuration = "scrape_duration_seconds"
	promScrapeSamples  = "scrape_samples_scraped"
)

// onExporter selects the exporter's scrape targets by its build_info
// series, so the panels work whatever the job is called. A target that
// is down has a stale build_info, which an instant selector drops; the
// last sample in the dashboard's time range keeps a down exporter on the
// panels.
func onExporter(expr string) string {
	return fmt.Sprintf("%s and on (instance, job) last_over_time(%s[$__range])", expr, c.ExporterBuildInfo.Name)
}

// health: the exporter itself.
func health(b *board, _ Options) {
	b.row("Targets")
	b.stat(6, 4, "lastNotNull", panelSpec{
		Title:   "Exporters up",
		Desc:    "Each exporter target (one tile per instance): 1 when Prometheus reached it on its last scrape (up), 0 in red when it is down; targets that exposed envelope_exporter_build_info in the dashboard's time range.",
		Unit:    units.Short,
		Targets: []target{{Expr: fmt.Sprintf("min by (instance) (%s)", onExporter(promUp)), Legend: "{{instance}}"}},
	}).Thresholds(thresholds("red", at(1.0, "green")))
	b.stat(6, 4, "lastNotNull", panelSpec{
		Title:   "Series held",
		Desc:    "k6 label sets the exporters hold, summed, against the configured series limit.",
		Unit:    units.Short,
		Targets: []target{{Expr: fmt.Sprintf("sum (%s)", c.ExporterSeries.Name), Legend: "series"}},
	})
	b.stat(6, 4, "lastNotNull", panelSpec{
		Title:   "ECS metadata up",
		Desc:    "Whether the last read of the ECS task metadata endpoint succeeded (ecs_up); empty outside ECS.",
		Unit:    units.Short,
		Targets: []target{{Expr: fmt.Sprintf("min (%s)", c.ECSUp.Name), Legend: "ecs_up"}},
	}).Thresholds(thresholds("red", at(1.0, "green")))
	b.stat(6, 4, "lastNotNull", panelSpec{
		Title:   "CloudWatch up",
		Desc:    "Whether the last CloudWatch GetMetricData poll succeeded; empty when CloudWatch polling is off.",
		Unit:    units.Short,
		Targets: []target{{Expr: fmt.Sprintf("min (%s)", c.CloudWatchUp.Name), Legend: "cloudwatch"}},
	}).Thresholds(thresholds("red", at(1.0, "green")))

	b.table(24, 5, panelSpec{
		Title:   "Exporter builds",
		Desc:    "Version, revision and Go version of each running exporter (envelope_exporter_build_info): mixed versions behind one Prometheus can disagree on series.",
		Unit:    units.Short,
		Targets: []target{{Expr: c.ExporterBuildInfo.Name, Instant: true, Table: true}},
	}).WithTransformation(organizeColumns(map[string]string{}, []string{"instance", "job", "version", "revision", "branch", "goversion"}, "Value"))

	b.row("Ingest")
	b.timeseries(12, 8, panelSpec{
		Title:   "Ingest rate by input",
		Desc:    "k6 samples ingested per second by input (ndjson follow, results replay, otlp push), summed over exporters.",
		Unit:    "points/s",
		Targets: []target{{Expr: fmt.Sprintf("sum by (source) (rate(%s[$__rate_interval]))", c.ExporterPointsIngested.Name), Legend: "{{source}}"}},
	})
	b.timeseries(12, 8, panelSpec{
		Title:   "Bad lines by reason",
		Desc:    "Malformed k6 input skipped per second, by input and reason. Bad lines are counted and logged at a bounded rate, never fatal; a steady rate means a format mismatch.",
		Unit:    "lines/s",
		Targets: []target{{Expr: fmt.Sprintf("sum by (source, reason) (rate(%s[$__rate_interval]))", c.ExporterBadLines.Name), Legend: "{{source}} {{reason}}"}},
	})
	b.timeseries(12, 8, panelSpec{
		Title:   "Ingest lag",
		Desc:    "Seconds between the newest live sample's k6 timestamp and its ingestion, per input, set when samples arrive: an input gone quiet keeps its last lag (see Ingest rate). Dashboards and alerts are this far behind k6.",
		Unit:    units.Seconds,
		Targets: []target{{Expr: fmt.Sprintf("max by (instance, source) (%s)", c.ExporterIngestLag.Name), Legend: "{{instance}} {{source}}"}},
	})
	b.timeseries(12, 8, panelSpec{
		Title: "OTLP requests by outcome",
		Desc:  "OTLP export requests from k6 on /v1/metrics per second, by outcome; anything but ok is a rejected batch (too large, wrong content type, bad protobuf).",
		Unit:  units.RequestsPerSecond,
		Targets: []target{{Expr: fmt.Sprintf("sum by (outcome) (rate(%s[$__rate_interval]))", c.ExporterOTLPRequests.Name),
			Legend: "{{outcome}}"}},
	})

	b.timeseries(24, 7, panelSpec{
		Title: "OTLP streams with explicit buckets",
		Desc: "OTLP histogram streams held that send explicit buckets, by k6 metric (" + c.ExporterOTLPExplicitStreams.Name + "). " +
			"k6 sends 15 bounds by default (0 to 10000 ms): counts and sums stay exact, but quantiles of these metrics are only as fine as the buckets " +
			"(a run's p95 +9 to +14% from k6's own, an endpoint's up to +48%), and the latency dashboards mark this time with the \"" + coarseAnnotationName + "\" annotation. " +
			"Empty means every OTLP histogram is exponential (or none arrives over OTLP). The exporter logs the k6 setting that gives exponential buckets, once per stream.",
		Unit:    units.Short,
		Targets: []target{{Expr: fmt.Sprintf("sum by (metric) (%s)", c.ExporterOTLPExplicitStreams.Name), Legend: "{{metric}}"}},
	})

	b.row("Limits and scrapes")
	b.timeseries(8, 8, panelSpec{
		Title: "Series overflow",
		Desc:  "k6 samples dropped per second because their label set would pass the series limit (raise --k6.series-limit or drop a tag), and push errors to the OpenTelemetry collector.",
		Unit:  "points/s",
		Targets: []target{
			{Expr: fmt.Sprintf("sum (rate(%s[$__rate_interval]))", c.ExporterSeriesOverflow.Name), Legend: "overflow"},
			{Expr: fmt.Sprintf("sum (rate(%s[$__rate_interval]))", c.ExporterOTLPPushErrors.Name), Legend: "OTLP push errors"},
		},
	})
	b.timeseries(8, 8, panelSpec{
		Title:   "Scrape duration",
		Desc:    "Time Prometheus took to scrape each exporter (scrape_duration_seconds). Rendering never waits for ingest, so this stays flat under load.",
		Unit:    units.Seconds,
		Targets: []target{{Expr: onExporter(promScrapeDuration), Legend: "{{instance}}"}},
	})
	b.timeseries(8, 8, panelSpec{
		Title:   "Samples per scrape",
		Desc:    "Samples each exporter returned per scrape (scrape_samples_scraped): grows with k6 label sets and histogram buckets.",
		Unit:    units.Short,
		Targets: []target{{Expr: onExporter(promScrapeSamples), Legend: "{{instance}}"}},
	})
}
