// Package catalogue is the one list of metric names, units and labels that
// the collectors expose and the rules and dashboards generators query, so
// none of them can drift from the others. docs/metrics.md is generated
// from it.
package catalogue

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

// Labels taken from k6 tags by default; others only when allowed.
var DefaultK6Labels = []string{"testid", "scenario", "name", "method", "status", "expected_response", "group"}

// Namespaces.
const (
	K6Namespace       = "k6"
	EnvelopeNamespace = "envelope"
	ExporterNamespace = "envelope_exporter"
)

// k6 series: mirrored from k6 samples.
var (
	HTTPReqs = Desc{Name: "k6_http_reqs_total", Type: CounterType, Unit: "requests",
		Help: "HTTP requests made by k6 (http_reqs).", Labels: DefaultK6Labels, Source: "k6"}
	// k6 Rate metrics become one counter with a condition label, as k6's
	// own OpenTelemetry output does: condition="nonzero" counts failed
	// requests for http_req_failed.
	HTTPReqFailed = Desc{Name: "k6_http_req_failed_total", Type: CounterType, Unit: "requests",
		Help: "http_req_failed samples by condition (nonzero = failed request).", Labels: append(DefaultK6Labels[:len(DefaultK6Labels):len(DefaultK6Labels)], "condition"), Source: "k6"}
	Iterations = Desc{Name: "k6_iterations_total", Type: CounterType, Unit: "iterations",
		Help: "Completed k6 iterations.", Labels: []string{"testid", "scenario"}, Source: "k6"}
	DroppedIterations = Desc{Name: "k6_dropped_iterations_total", Type: CounterType, Unit: "iterations",
		Help: "Iterations k6 could not start (arrival-rate executors out of VUs).", Labels: []string{"testid", "scenario"}, Source: "k6"}
	Checks = Desc{Name: "k6_checks_total", Type: CounterType, Unit: "checks",
		Help: "k6 check outcomes by condition (nonzero = passed).", Labels: []string{"testid", "scenario", "group", "check", "condition"}, Source: "k6"}
	VUs = Desc{Name: "k6_vus", Type: GaugeType, Unit: "vus",
		Help: "Active k6 virtual users.", Labels: []string{"testid"}, Source: "k6"}
	VUsMax = Desc{Name: "k6_vus_max", Type: GaugeType, Unit: "vus",
		Help: "Allocated k6 virtual users.", Labels: []string{"testid"}, Source: "k6"}
	DataSent = Desc{Name: "k6_data_sent_bytes_total", Type: CounterType, Unit: "bytes",
		Help: "Bytes sent by k6.", Labels: []string{"testid", "scenario"}, Source: "k6"}
	DataReceived = Desc{Name: "k6_data_received_bytes_total", Type: CounterType, Unit: "bytes",
		Help: "Bytes received by k6.", Labels: []string{"testid", "scenario"}, Source: "k6"}
	HTTPReqDuration = Desc{Name: "k6_http_req_duration_seconds", Type: HistogramType, Unit: "seconds",
		Help: "HTTP request duration (http_req_duration), native and classic buckets.", Labels: DefaultK6Labels, Source: "k6"}
	IterationDuration = Desc{Name: "k6_iteration_duration_seconds", Type: HistogramType, Unit: "seconds",
		Help: "k6 iteration duration.", Labels: []string{"testid", "scenario", "group"}, Source: "k6"}
)
