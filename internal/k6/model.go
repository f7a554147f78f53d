package k6

import "time"

// MetricType is k6's metric type.
type MetricType string

// The four k6 metric types.
const (
	Counter MetricType = "counter"
	Gauge   MetricType = "gauge"
	Rate    MetricType = "rate"
	Trend   MetricType = "trend"
)

// ValueType is what a metric's values measure (k6's "contains").
type ValueType string

// k6's value types: time is milliseconds, data is bytes.
const (
	Default ValueType = "default"
	Time    ValueType = "time"
	Data    ValueType = "data"
)

// Format names the file format a run was read from.
type Format string

// Formats the loader detects from content.
const (
	FormatSummaryExport   Format = "summary-export"   // legacy --summary-export
	FormatHandleSummary   Format = "handlesummary"    // legacy handleSummary(data)
	FormatMachineReadable Format = "machine-readable" // summary v1.0.0
	FormatNDJSON          Format = "ndjson"           // --out json
	FormatCSV             Format = "csv"              // --out csv
	FormatOTLP            Format = "otlp"             // --out opentelemetry
)

// Summary says whether a file of format f is a k6 summary: k6's
// end-of-test figures, without the samples a percentile's interval is
// taken from.
func (f Format) Summary() bool { return isSummary(f) }

// Mode says how a run's statistics were produced.
type Mode string

// Statistic modes.
const (
	ModeSummary Mode = "summary" // copied from a k6 summary file
	ModeExact   Mode = "exact"   // all samples held, k6's own formula
	ModeSketch  Mode = "sketch"  // bounded-memory relative-error sketch
)

// Metric is one metric or sub-metric of a run with its end-of-test values.
// Values use k6's stat names: count, rate (counters); passes, fails, rate
// (rates: passes = non-zero samples); value, min, max (gauges); avg, min,
// med, max, p(N), count (trends). Time values are milliseconds.
type Metric struct {
	Name       string            // full name, "http_req_duration{expected_response:true}" for a sub-metric
	Parent     string            // base metric name ("http_req_duration"); equals Name for a metric
	Tags       map[string]string // a sub-metric's selector tags; nil for a metric
	Type       MetricType
	Contains   ValueType
	Values     map[string]float64
	Thresholds map[string]bool // expression -> passed (ok); summary-export's inverted booleans are normalized
	Mode       Mode

	// Intervals are the confidence intervals of a trend view's median
	// and percentiles, by stat name ("med", "p(95)"), from its samples
	// when LoadOptions.IntervalConfidence asks for them: the wider of the
	// order-statistic interval, which assumes independent samples, and
	// the interval from the view's batches over time, which holds when
	// slow samples come in bursts (stats.BatchQuantileCI); nil for
	// summaries, which hold no samples.
	Intervals map[string]Interval
	// Fingerprint identifies a trend view's samples as a multiset: two
	// views of the same samples, in any order, have the same one. Point
	// streams read with LoadOptions.GroupBy have it; 0 otherwise.
	Fingerprint uint64
}

// Interval is a confidence interval of a statistic.
type Interval struct {
	Low, High float64
}

// Run is one k6 test run, normalized.
type Run struct {
	Source    string // file path as given, "-" for stdin
	Format    Format
	Mode      Mode
	K6Version string    // when the file tells
	Start     time.Time // zero when unknown (summary files)
	End       time.Time
	Duration  time.Duration // test duration: from state/config, or derived (count/rate), or End-Start
	Metrics   map[string]*Metric

	// GroupBy is the tag of Groups; Groups holds one metric set per tag value.
	GroupBy string
	Groups  map[string]map[string]*Metric

	// Checks by name, from summaries' root_group or from check samples.
	Checks map[string]Check

	// Points are the samples of a point stream, kept only when asked
	// (LoadOptions.KeepPoints); nil for summaries.
	Points []Point

	// TagValues are the values each tag takes on the stream's samples in
	// the window, sorted, at most MaxTagValues a tag (the run's test-wide
	// tags, such as testid or a --tag, have one); nil for summaries.
	TagValues map[string][]string

	// Timeline is http_req_duration by time, when LoadOptions.Timeline
	// asks for it; nil for summaries.
	Timeline *Timeline

	// Skipped counts bad lines skipped in lenient mode.
	Skipped int

	// TrendSamples is how many trend samples a point stream had (in the
	// window); HeldBytes is the memory its trend statistics needed: the
	// samples themselves in exact mode, the sketches' buckets in sketch
	// mode.
	TrendSamples int64
	HeldBytes    int64
}

// Check is a k6 check's outcome counts.
type Check struct {
	Name   string
	Path   string
	Passes int64
	Fails  int64
}

// Point is one sample of a k6 point stream (NDJSON Point line or CSV row).
type Point struct {
	Metric   string
	Time     time.Time
	Value    float64
	Tags     map[string]string
	Metadata map[string]string // vu, iter and user metadata; nil when absent
}

// MetricDef is a metric's definition from an NDJSON Metric line.
type MetricDef struct {
	Name       string
	Type       MetricType
	Contains   ValueType
	Thresholds []string
	Submetrics []SubmetricDef
}

// SubmetricDef is a sub-metric declared on a Metric line.
type SubmetricDef struct {
	Name   string // "http_req_duration{name:home}"
	Suffix string // "name:home"
	Tags   map[string]string
}
