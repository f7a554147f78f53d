// Package catalogue is the one list of metric names, units and labels that
// the collectors expose and the rules and dashboards generators query, so
// none of them can drift from the others. docs/metrics.md is generated
// from it.
package catalogue

import "slices"

// Type is a Prometheus metric type.
type Type string

// Metric types.
const (
	CounterType   Type = "counter"
	GaugeType     Type = "gauge"
	HistogramType Type = "histogram"
	InfoType      Type = "gauge (info)"
)

// Desc describes one exposed metric family.
type Desc struct {
	Name   string
	Type   Type
	Unit   string // base unit: seconds, bytes, requests, ratio, ...
	Help   string
	Labels []string
	Source string // where the data comes from: "k6", "envelope", "exporter", "ecs", "cloudwatch"
}

// defaultK6Labels are the labels taken from k6 tags by default; others
// only when allowed.
var defaultK6Labels = []string{"testid", "scenario", "name", "method", "status", "expected_response", "group"}

// DefaultK6Labels are the labels taken from k6 tags by default (others
// only when allowed), in label order; a fresh slice each call.
func DefaultK6Labels() []string { return slices.Clone(defaultK6Labels) }

// IsDefaultK6Label reports whether the k6 tag l is exposed as a label
// by default.
func IsDefaultK6Label(l string) bool { return slices.Contains(defaultK6Labels, l) }

// k6 Rate metrics are one counter with a condition label, as k6's own
// OpenTelemetry output writes them: ConditionNonzero counts the true
// samples (failed requests, passed checks), ConditionZero the others.
// NonzeroMatcher selects the true samples in PromQL.
const (
	ConditionLabel   = "condition"
	ConditionNonzero = "nonzero"
	ConditionZero    = "zero"
	NonzeroMatcher   = ConditionLabel + `="` + ConditionNonzero + `"`
	ZeroMatcher      = ConditionLabel + `="` + ConditionZero + `"`
)

// Namespaces.
const (
	K6Namespace       = "k6"
	EnvelopeNamespace = "envelope"
	ExporterNamespace = "envelope_exporter"
)

// k6 series: mirrored from k6 samples.
var (
	HTTPReqs = Desc{Name: "k6_http_reqs_total", Type: CounterType, Unit: "requests",
		Help: "HTTP requests made by k6 (http_reqs).", Labels: DefaultK6Labels(), Source: "k6"}
	// k6 Rate metrics become one counter with a condition label, as k6's
	// own OpenTelemetry output does: condition="nonzero" counts failed
	// requests for http_req_failed.
	HTTPReqFailed = Desc{Name: "k6_http_req_failed_total", Type: CounterType, Unit: "requests",
		Help: "http_req_failed samples by condition (nonzero = failed request).", Labels: append(DefaultK6Labels(), ConditionLabel), Source: "k6"}
	Iterations = Desc{Name: "k6_iterations_total", Type: CounterType, Unit: "iterations",
		Help: "Completed k6 iterations.", Labels: []string{"testid", "scenario"}, Source: "k6"}
	DroppedIterations = Desc{Name: "k6_dropped_iterations_total", Type: CounterType, Unit: "iterations",
		Help: "Iterations k6 could not start (arrival-rate executors out of VUs).", Labels: []string{"testid", "scenario"}, Source: "k6"}
	Checks = Desc{Name: "k6_checks_total", Type: CounterType, Unit: "checks",
		Help: "k6 check outcomes by condition (nonzero = passed).", Labels: []string{"testid", "scenario", "group", "check", ConditionLabel}, Source: "k6"}
	VUs = Desc{Name: "k6_vus", Type: GaugeType, Unit: "vus",
		Help: "Active k6 virtual users.", Labels: []string{"testid"}, Source: "k6"}
	VUsMax = Desc{Name: "k6_vus_max", Type: GaugeType, Unit: "vus",
		Help: "Allocated k6 virtual users.", Labels: []string{"testid"}, Source: "k6"}
	DataSent = Desc{Name: "k6_data_sent_bytes_total", Type: CounterType, Unit: "bytes",
		Help: "Bytes sent by k6.", Labels: []string{"testid", "scenario"}, Source: "k6"}
	DataReceived = Desc{Name: "k6_data_received_bytes_total", Type: CounterType, Unit: "bytes",
		Help: "Bytes received by k6.", Labels: []string{"testid", "scenario"}, Source: "k6"}
	HTTPReqDuration = Desc{Name: "k6_http_req_duration_seconds", Type: HistogramType, Unit: "seconds",
		Help: "HTTP request duration (http_req_duration), native and classic buckets.", Labels: DefaultK6Labels(), Source: "k6"}
	IterationDuration = Desc{Name: "k6_iteration_duration_seconds", Type: HistogramType, Unit: "seconds",
		Help: "k6 iteration duration.", Labels: []string{"testid", "scenario", "group"}, Source: "k6"}
)

// Envelope series: the envelope file's figures as gauges (exporter
// --envelope), so dashboards draw the bands and rules can compare live
// series with them. Every envelope series carries the envelope's name.
// Latency bands carry the series they bound (`metric`, e.g.
// k6_http_req_duration_seconds or k6_actor_get_seconds), the endpoint
// (empty for the overall band), its selector tag and value when the
// endpoint is a tag value of http_req_duration (`tag`, `value`), and the
// percentile ("50", "95", "99").
var (
	envelopeLatencyLabels = []string{"envelope", "metric", "endpoint", "tag", "value", "percentile"}

	EnvelopeInfo = Desc{Name: "envelope_info", Type: InfoType,
		Help: "The loaded envelope: name, number of baseline runs and the tolerance window.", Labels: []string{"envelope", "runs", "window"}, Source: "envelope"}
	EnvelopeThroughputMin = Desc{Name: "envelope_throughput_min_requests_per_second", Type: GaugeType, Unit: "requests per second",
		Help: "Lowest per-run http_reqs rate of the baseline runs (throughput.min).", Labels: []string{"envelope"}, Source: "envelope"}
	EnvelopeThroughputMax = Desc{Name: "envelope_throughput_max_requests_per_second", Type: GaugeType, Unit: "requests per second",
		Help: "Highest per-run http_reqs rate of the baseline runs (throughput.max).", Labels: []string{"envelope"}, Source: "envelope"}
	EnvelopeThroughputMean = Desc{Name: "envelope_throughput_mean_requests_per_second", Type: GaugeType, Unit: "requests per second",
		Help: "Mean per-run http_reqs rate of the baseline runs (throughput.mean).", Labels: []string{"envelope"}, Source: "envelope"}
	EnvelopeThroughputFloor = Desc{Name: "envelope_throughput_floor_requests_per_second", Type: GaugeType, Unit: "requests per second",
		Help: "Throughput alert floor: throughput.min lowered by tolerance.throughput_drop.", Labels: []string{"envelope"}, Source: "envelope"}
	EnvelopeIterationsMin = Desc{Name: "envelope_iterations_min_per_second", Type: GaugeType, Unit: "iterations per second",
		Help: "Lowest per-run iterations rate of the baseline runs (iterations.min).", Labels: []string{"envelope"}, Source: "envelope"}
	EnvelopeIterationsMax = Desc{Name: "envelope_iterations_max_per_second", Type: GaugeType, Unit: "iterations per second",
		Help: "Highest per-run iterations rate of the baseline runs (iterations.max).", Labels: []string{"envelope"}, Source: "envelope"}
	EnvelopeThroughputCV = Desc{Name: "envelope_throughput_cv_ratio", Type: GaugeType, Unit: "ratio",
		Help: "Coefficient of variation of the per-run throughput across the baseline runs (throughput.cv).", Labels: []string{"envelope"}, Source: "envelope"}
	EnvelopeThroughputCVMax = Desc{Name: "envelope_throughput_cv_max_ratio", Type: GaugeType, Unit: "ratio",
		Help: "Upper bound on the live throughput CV (tolerance.max_cv).", Labels: []string{"envelope"}, Source: "envelope"}
	EnvelopeLatencyMin = Desc{Name: "envelope_latency_min_seconds", Type: GaugeType, Unit: "seconds",
		Help: "Lower edge of a latency band: the lowest per-run percentile of the baseline runs.", Labels: envelopeLatencyLabels, Source: "envelope"}
	EnvelopeLatencyMax = Desc{Name: "envelope_latency_max_seconds", Type: GaugeType, Unit: "seconds",
		Help: "Upper edge of a latency band: the highest per-run percentile of the baseline runs.", Labels: envelopeLatencyLabels, Source: "envelope"}
	EnvelopeLatencyThreshold = Desc{Name: "envelope_latency_threshold_seconds", Type: GaugeType, Unit: "seconds",
		Help: "Latency alert threshold: the band's upper edge raised by tolerance.latency_rise (also a classic bucket bound).", Labels: envelopeLatencyLabels, Source: "envelope"}
	EnvelopeErrorRatio = Desc{Name: "envelope_error_ratio", Type: GaugeType, Unit: "ratio",
		Help: "Failed-request ratio observed across the baseline runs (errors.rate).", Labels: []string{"envelope"}, Source: "envelope"}
	EnvelopeErrorBudget = Desc{Name: "envelope_error_budget_ratio", Type: GaugeType, Unit: "ratio",
		Help: "Failed-request ratio allowed before alerting (tolerance.error_ratio; 0 means any failure alerts).", Labels: []string{"envelope"}, Source: "envelope"}
	EnvelopeEndpointShare = Desc{Name: "envelope_endpoint_share_ratio", Type: GaugeType, Unit: "ratio",
		Help: "Share of all requests an endpoint took in the baseline runs.", Labels: []string{"envelope", "metric", "endpoint", "tag", "value"}, Source: "envelope"}
)

// Exporter self-metrics.
var (
	ExporterPointsIngested = Desc{Name: "envelope_exporter_points_ingested_total", Type: CounterType, Unit: "points",
		Help: "k6 samples kept (not refused, not dropped over a limit), by input (ndjson, results, otlp, api).", Labels: []string{"source"}, Source: "exporter"}
	ExporterBadLines = Desc{Name: "envelope_exporter_bad_lines_total", Type: CounterType, Unit: "lines",
		Help: "Bad k6 input, by input and reason: skipped (malformed, bad_value, overflow, unknown_metric, bad_name, label_too_long, late_point, bad_histogram, ...) or repaired (invalid_utf8: label values kept with U+FFFD).", Labels: []string{"source", "reason"}, Source: "exporter"}
	ExporterIngestLag = Desc{Name: "envelope_exporter_ingest_lag_seconds", Type: GaugeType, Unit: "seconds",
		Help: "How long after its k6 timestamp the newest live sample was ingested, set when samples arrive: an input gone quiet keeps the lag of its last sample (its silence shows in envelope_exporter_last_point_timestamp_seconds).", Labels: []string{"source"}, Source: "exporter"}
	ExporterLastPoint = Desc{Name: "envelope_exporter_last_point_timestamp_seconds", Type: GaugeType, Unit: "seconds",
		Help: "k6 timestamp of the newest sample ingested, by input.", Labels: []string{"source"}, Source: "exporter"}
	ExporterOTLPRequests = Desc{Name: "envelope_exporter_otlp_requests_total", Type: CounterType, Unit: "requests",
		Help: "OTLP export requests received (HTTP /v1/metrics and gRPC), by outcome (ok, partial, bad_request, too_large, unsupported_media_type, method_not_allowed, busy, unauthorized, timeout).", Labels: []string{"outcome"}, Source: "exporter"}
	ExporterSeries = Desc{Name: "envelope_exporter_series", Type: GaugeType, Unit: "series",
		Help: "k6 label sets currently held.", Source: "exporter"}
	ExporterSeriesLimit = Desc{Name: "envelope_exporter_series_limit", Type: GaugeType, Unit: "series",
		Help: "Maximum k6 label sets held (--k6.series-limit); 0 means no limit.", Source: "exporter"}
	ExporterSeriesOverflow = Desc{Name: "envelope_exporter_series_overflow_total", Type: CounterType, Unit: "points",
		Help: "k6 samples dropped over a limit, by reason: series (--k6.series-limit), metrics (--k6.metric-limit), streams (--otlp.stream-limit), label_bytes (--k6.label-bytes-limit).", Labels: []string{"reason"}, Source: "exporter"}
	ExporterOTLPStreamStarts = Desc{Name: "envelope_exporter_otlp_stream_starts_total", Type: CounterType, Unit: "streams",
		Help: "New start times of an OTLP stream identity (resource, metric, attributes) already held: another k6 instance with the same tags, or a restart. Each start time keeps its own cumulative state and their increments add up.", Source: "exporter"}
	ExporterOTLPExplicitStreams = Desc{Name: "envelope_exporter_otlp_explicit_bucket_streams", Type: GaugeType, Unit: "streams",
		Help: "OTLP histogram streams held that send explicit buckets (k6's default: 15 bounds up to 10 s), by k6 metric: quantiles of that metric are only as fine as the buckets (a p95 anywhere in 1000–2500 ms, say). The exporter logs, once per stream, the k6 setting that gives exponential buckets.", Labels: []string{"metric"}, Source: "exporter"}
	ExporterFollowReopens = Desc{Name: "envelope_exporter_follow_reopens_total", Type: CounterType, Unit: "reopens",
		Help: "Times the followed NDJSON file was reopened after truncation or rotation.", Source: "exporter"}
	ExporterOTLPPushErrors = Desc{Name: "envelope_exporter_otlp_push_errors_total", Type: CounterType, Unit: "errors",
		Help: "Failed pushes to the OpenTelemetry collector (--otlp.push-endpoint).", Source: "exporter"}
	ExporterBuildInfo = Desc{Name: "envelope_exporter_build_info", Type: InfoType,
		Help:   "A metric with a constant '1' value labeled by version, revision, branch, goversion from which envelope_exporter was built, and the goos and goarch for the build.",
		Labels: []string{"version", "revision", "branch", "goversion", "goos", "goarch", "tags"}, Source: "exporter"}
)

// k6Series lists the k6 series with a fixed name (custom trends get
// theirs from SeriesName).
var k6Series = []Desc{HTTPReqs, HTTPReqFailed, Iterations, DroppedIterations, Checks, VUs, VUsMax,
	DataSent, DataReceived, HTTPReqDuration, IterationDuration}

var envelopeSeries = []Desc{EnvelopeInfo, EnvelopeThroughputMin, EnvelopeThroughputMax, EnvelopeThroughputMean,
	EnvelopeThroughputFloor, EnvelopeIterationsMin, EnvelopeIterationsMax, EnvelopeThroughputCV, EnvelopeThroughputCVMax,
	EnvelopeLatencyMin, EnvelopeLatencyMax, EnvelopeLatencyThreshold, EnvelopeErrorRatio, EnvelopeErrorBudget,
	EnvelopeEndpointShare}

var exporterSeries = []Desc{ExporterPointsIngested, ExporterBadLines, ExporterIngestLag, ExporterLastPoint,
	ExporterOTLPRequests, ExporterSeries, ExporterSeriesLimit, ExporterSeriesOverflow, ExporterFollowReopens,
	ExporterOTLPPushErrors, ExporterOTLPStreamStarts, ExporterOTLPExplicitStreams, ExporterBuildInfo}

// All lists every fixed-name descriptor: k6, envelope, exporter, ECS,
// then CloudWatch, each group in declaration order.
func All() []Desc {
	var out []Desc
	out = append(out, k6Series...)
	out = append(out, envelopeSeries...)
	out = append(out, exporterSeries...)
	out = append(out, ECSDescs()...)
	out = append(out, CloudWatchDescs()...)
	return out
}

// Lookup finds a descriptor by series name.
func Lookup(name string) (Desc, bool) {
	for _, d := range All() {
		if d.Name == name {
			return d, true
		}
	}
	return Desc{}, false
}
