package figures

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Interval is a confidence interval of one run's figure (ms).
type Interval struct {
	Low  float64 `json:"low" yaml:"low"`
	High float64 `json:"high" yaml:"high"`
}

// Latency is one latency trend's figures in a run (ms): the run's
// http_req_duration, or one endpoint's. A statistic the run's file lacks
// (p99 outside summaryTrendStats) is absent (0).
type Latency struct {
	// Count is the samples behind the figures, when known.
	Count  int64   `json:"count,omitempty" yaml:"count,omitempty"`
	Avg    float64 `json:"avg,omitempty" yaml:"avg,omitempty"`
	Median float64 `json:"median,omitempty" yaml:"median,omitempty"`
	P95    float64 `json:"p95,omitempty" yaml:"p95,omitempty"`
	P99    float64 `json:"p99,omitempty" yaml:"p99,omitempty"`
	Max    float64 `json:"max,omitempty" yaml:"max,omitempty"`
	// The order-statistic intervals of the percentiles at
	// IntervalConfidence, from the run's samples (point files only).
	MedianCI *Interval `json:"median_ci,omitempty" yaml:"median_ci,omitempty"`
	P95CI    *Interval `json:"p95_ci,omitempty" yaml:"p95_ci,omitempty"`
	P99CI    *Interval `json:"p99_ci,omitempty" yaml:"p99_ci,omitempty"`
}

// Stat is the latency figure n and its interval; 0 for a figure that is
// not a latency statistic.
func (l Latency) Stat(n Name) (float64, *Interval) {
	switch n {
	case Avg:
		return l.Avg, nil
	case Median:
		return l.Median, l.MedianCI
	case P95:
		return l.P95, l.P95CI
	case P99:
		return l.P99, l.P99CI
	case Max:
		return l.Max, nil
	}
	return 0, nil
}

// set sets the latency figure n.
func (l *Latency) set(n Name, v float64, ci *Interval) {
	switch n {
	case Avg:
		l.Avg = v
	case Median:
		l.Median, l.MedianCI = v, ci
	case P95:
		l.P95, l.P95CI = v, ci
	case P99:
		l.P99, l.P99CI = v, ci
	case Max:
		l.Max = v
	}
}

// Run is what one k6 run measured: its headline figures, its
// http_req_duration and every endpoint's latency figures with their
// sample counts and intervals, and, in memory only, its workload,
// provenance and what a saturation check reads. The fields with a tag
// are a run's entry in an envelope file, where it keeps figures rounded
// to six significant digits (Round).
type Run struct {
	Source          string  `json:"source" yaml:"source"`
	DurationSeconds float64 `json:"duration_s" yaml:"duration_s"`
	Requests        int64   `json:"requests" yaml:"requests"`
	Iterations      int64   `json:"iterations" yaml:"iterations"`
	RPS             float64 `json:"rps" yaml:"rps"`
	IterationsPerS  float64 `json:"iterations_per_s" yaml:"iterations_per_s"`
	RequestsPerIter float64 `json:"requests_per_iteration" yaml:"requests_per_iteration"`
	Failed          int64   `json:"failed" yaml:"failed"`
	// The run's http_req_duration; its count is the requests'.
	Avg      float64   `json:"avg" yaml:"avg"`
	Median   float64   `json:"median" yaml:"median"`
	P95      float64   `json:"p95" yaml:"p95"`
	P99      float64   `json:"p99" yaml:"p99"`
	Max      float64   `json:"max" yaml:"max"`
	MedianCI *Interval `json:"median_ci,omitempty" yaml:"median_ci,omitempty"`
	P95CI    *Interval `json:"p95_ci,omitempty" yaml:"p95_ci,omitempty"`
	P99CI    *Interval `json:"p99_ci,omitempty" yaml:"p99_ci,omitempty"`
	// Endpoints are each endpoint's figures, by endpoint key.
	Endpoints map[string]Latency `json:"endpoints,omitempty" yaml:"endpoints,omitempty"`

	// Checked is how many requests http_req_failed judged (its passes
	// and fails), 0 when the run has no http_req_failed.
	Checked int64 `json:"-" yaml:"-"`
	// DroppedIterations are the iterations k6 could not start.
	DroppedIterations int64 `json:"-" yaml:"-"`
	// Workload is the load the run applied.
	Workload Workload `json:"-" yaml:"-"`
	// Provenance is where the run's figures came from.
	Provenance Source `json:"-" yaml:"-"`
	// Tags are the values each tag takes on the run's samples, at most a
	// few a tag; nil for summaries.
	Tags map[string][]string `json:"-" yaml:"-"`
	// Halves compare the run's second half with its first, when its
	// samples were read by time.
	Halves *Halves `json:"-" yaml:"-"`
	// Timeline is the run over time, when its samples were read by
	// time; nil for summaries.
	Timeline *Timeline `json:"-" yaml:"-"`
	// Checks are the run's k6 checks, by name.
	Checks []Check `json:"-" yaml:"-"`
}

// Source is where a run's figures came from: the file, its hash and
// format, and what the file tells of its run.
type Source struct {
	File      string    `json:"file" yaml:"file"`
	SHA256    string    `json:"sha256" yaml:"sha256"`
	Format    string    `json:"format" yaml:"format"`
	K6Version string    `json:"k6_version,omitempty" yaml:"k6_version,omitempty"`
	Start     time.Time `json:"start,omitzero" yaml:"start,omitempty"`
	End       time.Time `json:"end,omitzero" yaml:"end,omitempty"`
	TestID    string    `json:"testid,omitempty" yaml:"testid,omitempty"`
}

// Halves are a run's second half against its first: its request count
// and its http_req_duration p95 in each half of its span, with their own
// errors.
type Halves struct {
	Requests [2]int64
	P95      [2]float64
	// P95LogSE is the standard error of ln P95 of each half, from the
	// half's own samples as a run's own error is taken (the wider of the
	// order-statistic interval and the half's batches over time, read
	// back as Value.LogVar reads an interval); 0 when unknown.
	P95LogSE [2]float64
	// Rate is each half's requests a second over the time bins wholly
	// inside the run's steady part, and Counted the requests in those
	// bins: the run's first and last bins lie partly outside it, and the
	// bins of its ramp-down (k6 letting the last iterations finish) are
	// left out. 0 when unknown: the halves are then equally long and
	// compared by Requests.
	Rate    [2]float64
	Counted [2]int64
	// Dispersion is the variance-to-mean ratio of the requests per time
	// bin within the halves, at least 1: a half's count of n requests
	// has a log variance of Dispersion/n (Poisson when 1, more when
	// requests come in bursts); 0 when unknown, read as 1.
	Dispersion float64
}

// RateLogRatio is ln of the second half's request rate over the first's,
// and its standard error (see Dispersion).
func (h *Halves) RateLogRatio() (d, se float64) {
	n0, n1 := float64(h.Requests[0]), float64(h.Requests[1])
	d = math.Log(n1 / n0)
	if h.Rate[0] > 0 && h.Rate[1] > 0 && h.Counted[0] > 0 && h.Counted[1] > 0 {
		n0, n1 = float64(h.Counted[0]), float64(h.Counted[1])
		d = math.Log(h.Rate[1] / h.Rate[0])
	}
	phi := max(h.Dispersion, 1)
	return d, math.Sqrt(phi * (1/n0 + 1/n1))
}

// P95LogRatio is ln of the second half's p95 over the first's, and its
// standard error; ok is false when either half's error is unknown.
func (h *Halves) P95LogRatio() (d, se float64, ok bool) {
	if !(h.P95[0] > 0 && h.P95[1] > 0 && h.P95LogSE[0] > 0 && h.P95LogSE[1] > 0) {
		return 0, 0, false
	}
	return math.Log(h.P95[1] / h.P95[0]), math.Hypot(h.P95LogSE[0], h.P95LogSE[1]), true
}

// Aggregate is the run's http_req_duration as a Latency, its count the
// requests (k6 records one sample per request).
func (r *Run) Aggregate() Latency {
	return Latency{Count: r.Requests, Avg: r.Avg, Median: r.Median, P95: r.P95, P99: r.P99, Max: r.Max,
		MedianCI: r.MedianCI, P95CI: r.P95CI, P99CI: r.P99CI}
}

// SetAggregate sets the run's http_req_duration figures.
func (r *Run) SetAggregate(l Latency) {
	r.Avg, r.Median, r.P95, r.P99, r.Max = l.Avg, l.Median, l.P95, l.P99, l.Max
	r.MedianCI, r.P95CI, r.P99CI = l.MedianCI, l.P95CI, l.P99CI
}

// Of is the latency figures of an endpoint, or the aggregate's for "";
// ok is false when the run lacks the endpoint.
func (r *Run) Of(endpoint string) (Latency, bool) {
	if endpoint == "" {
		return r.Aggregate(), true
	}
	l, ok := r.Endpoints[endpoint]
	return l, ok
}

// ErrorRate is the run's share of failed requests, 0 without requests.
func (r *Run) ErrorRate() float64 {
	if r.Requests <= 0 {
		return 0
	}
	return Round(float64(r.Failed) / float64(r.Requests))
}

// Duration is the span the run's figures cover.
func (r *Run) Duration() time.Duration {
	return time.Duration(math.Round(r.DurationSeconds * 1e9))
}

// WholeDuration is the run's length before any warm-up was cut, the
// length its workload is compared by.
func (r *Run) WholeDuration() time.Duration { return r.Duration() + r.Workload.Skipped }

// Value is one figure of a run.
type Value struct {
	X float64
	// Count is the samples behind X (requests, iterations); 0 unknown.
	Count int64
	// CI is a percentile's order-statistic interval at
	// IntervalConfidence; nil when unknown.
	CI *Interval
}

// Value is the run's figure k; ok is false when the run lacks it: an
// endpoint it did not call, a statistic its file lacks, the iteration
// figures of a run without iterations.
func (r *Run) Value(k Key) (Value, bool) {
	d, known := Lookup(k.Figure)
	if !known {
		return Value{}, false
	}
	if d.Latency {
		l, ok := r.Of(k.Endpoint)
		if !ok {
			return Value{}, false
		}
		x, ci := l.Stat(k.Figure)
		return Value{X: x, Count: l.Count, CI: ci}, x != 0
	}
	if k.Endpoint != "" {
		return Value{}, false
	}
	switch k.Figure {
	case RPS:
		return Value{X: r.RPS, Count: r.Requests}, true
	case IterationsPerS:
		return Value{X: r.IterationsPerS, Count: r.Iterations}, r.Iterations > 0
	case RequestsPerIter:
		return Value{X: r.RequestsPerIter, Count: r.Iterations}, r.Iterations > 0
	case ErrorRate:
		return Value{X: r.ErrorRate(), Count: r.Requests}, true
	}
	return Value{}, false
}

// Set sets the run's figure k, the inverse of Value: a count given with
// a headline figure sets the requests or iterations behind it.
func (r *Run) Set(k Key, v Value) {
	d, known := Lookup(k.Figure)
	if !known {
		return
	}
	if d.Latency {
		if k.Endpoint == "" {
			l := r.Aggregate()
			l.set(k.Figure, v.X, v.CI)
			r.SetAggregate(l)
			return
		}
		if r.Endpoints == nil {
			r.Endpoints = map[string]Latency{}
		}
		l := r.Endpoints[k.Endpoint]
		l.set(k.Figure, v.X, v.CI)
		if v.Count > 0 {
			l.Count = v.Count
		}
		r.Endpoints[k.Endpoint] = l
		return
	}
	switch k.Figure {
	case RPS:
		r.RPS, r.Requests = v.X, v.Count
	case IterationsPerS:
		r.IterationsPerS, r.Iterations = v.X, v.Count
	case RequestsPerIter:
		r.RequestsPerIter = v.X
	case ErrorRate:
		r.Failed = int64(math.Round(v.X * float64(v.Count)))
	}
}

// KeyValue is one figure of a run with its key.
type KeyValue struct {
	Key Key
	Value
}

// Figures lists every figure the run has: the aggregate's, headline
// figures first, then each endpoint's by endpoint key.
func (r *Run) Figures() []KeyValue {
	var out []KeyValue
	for _, d := range defs {
		k := Key{Figure: d.Name}
		if v, ok := r.Value(k); ok {
			out = append(out, KeyValue{k, v})
		}
	}
	for _, ep := range r.EndpointKeys() {
		for _, n := range LatencyNames() {
			k := Key{Endpoint: ep, Figure: n}
			if v, ok := r.Value(k); ok {
				out = append(out, KeyValue{k, v})
			}
		}
	}
	return out
}

// EndpointKeys are the run's endpoints, sorted.
func (r *Run) EndpointKeys() []string {
	keys := make([]string, 0, len(r.Endpoints))
	for k := range r.Endpoints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// RunValue is the figure k as a judgement reads it: its value, and the
// sampling variance of its logarithm within the run where the run tells
// it: 1/count for a rate (a Poisson count over a fixed time), from the
// interval for a percentile, NaN otherwise.
func (r *Run) RunValue(k Key) (stats.RunValue, bool) {
	v, ok := r.Value(k)
	if !ok {
		return stats.RunValue{}, false
	}
	return stats.RunValue{X: v.X, LogVar: v.LogVar(k.Figure)}, true
}

// LogVar is the sampling variance of ln(X) within its run for figure n:
// see Run.RunValue.
func (v Value) LogVar(n Name) float64 {
	switch {
	case n.Def().Rate:
		return countLogVar(float64(v.Count))
	case v.CI != nil:
		se := stats.LogSEOfInterval(v.CI.Low, v.CI.High, IntervalConfidence)
		return se * se
	}
	return math.NaN()
}

// countLogVar is the variance of ln(n) for a Poisson count n: a rate's
// own sampling variance over a fixed time; NaN for an unknown count.
func countLogVar(n float64) float64 {
	if !(n > 0) {
		return math.NaN()
	}
	return 1 / n
}

// Round keeps six significant digits: an envelope file stays readable
// and byte-stable, and no figure a report quotes loses a digit.
func Round(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return v
}

// NewInterval is the interval [lo, hi], rounded as figures are.
func NewInterval(lo, hi float64) *Interval {
	return &Interval{Low: Round(lo), High: Round(hi)}
}

// FromSamples are the latency figures of a trend's samples, sorted
// ascending, without their times: k6's percentile formula, the mean of
// the samples in the order given (sum), and each percentile's
// order-statistic interval, which holds for independent samples only.
// FromTimedSamples takes what the k6 loader takes for a point file.
func FromSamples(sorted []float64, sum float64) Latency {
	return fromSamples(sorted, sum, nil)
}

// FromTimedSamples are the latency figures of a trend's samples with
// their times (Unix nanoseconds), in time order, as the k6 loader
// computes them for a point file: FromSamples' figures, each
// percentile's interval widened to the run's own error over time
// (stats.RunQuantileCI over the loader's time bins).
func FromTimedSamples(vals []float64, times []int64) Latency {
	var sum float64
	for _, v := range vals {
		sum += v
	}
	bins := k6.IntervalBinsOf(times, vals)
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	return fromSamples(sorted, sum, bins)
}

func fromSamples(sorted []float64, sum float64, bins []*stats.Sketch) Latency {
	n := len(sorted)
	if n == 0 {
		return Latency{}
	}
	l := Latency{Count: int64(n), Avg: Round(sum / float64(n)), Max: Round(sorted[n-1])}
	for _, name := range Percentiles() {
		p := name.Def().Quantile
		q := stats.Quantile(sorted, p)
		var ci *Interval
		lo, hi, ok := stats.QuantileCI(sorted, p, IntervalConfidence)
		if lo, hi, ok := stats.RunQuantileCI(lo, hi, ok, bins, p, q, IntervalConfidence); ok {
			ci = NewInterval(lo, hi)
		}
		l.set(name, Round(q), ci)
	}
	return l
}

// sortedStrings is the set's members, sorted.
func sortedStrings(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Baseline is figure k of every run that has it with a positive value,
// as a judgement reads it (RunValue), and a typical run of them: their
// geometric mean value, with the own sampling variance of a run of their
// mean count for a rate, else their mean known own variance (NaN when
// none is known).
func Baseline(runs []Run, k Key) (values []stats.RunValue, typical stats.RunValue) {
	var xs []float64
	var counts, vars float64
	known := 0
	for i := range runs {
		v, ok := runs[i].Value(k)
		if !ok || !(v.X > 0) {
			continue
		}
		rv := stats.RunValue{X: v.X, LogVar: v.LogVar(k.Figure)}
		values = append(values, rv)
		xs = append(xs, v.X)
		counts += float64(v.Count)
		if !math.IsNaN(rv.LogVar) {
			vars += rv.LogVar
			known++
		}
	}
	typical = stats.RunValue{X: stats.GeoMean(xs), LogVar: math.NaN()}
	switch {
	case len(values) == 0:
	case k.Figure.Def().Rate:
		typical.LogVar = countLogVar(counts / float64(len(values)))
	case known > 0:
		typical.LogVar = vars / float64(known)
	}
	return values, typical
}
