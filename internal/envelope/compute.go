package envelope

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Options steer Compute.
type Options struct {
	Name       string
	Match      string        // label matchers of the tests the envelope judges (Envelope.Match)
	GroupBy    string        // tag whose values became endpoint bands ("" = none)
	SkipWarmup time.Duration // recorded in provenance; the loader applied it
	// Force accepts runs whose workloads or metric sets differ; the
	// differences become warnings instead of an error.
	Force bool
	// Workload from a `k6 inspect` options file; nil when not given.
	Workload *Workload
	// GeneratedAt overrides the provenance date; zero means the latest
	// time the sources tell (absent when none does).
	GeneratedAt time.Time
	// Tolerance to write; nil means figures.DefaultTolerance().
	Tolerance *figures.Tolerance
}

// Limits of the saturation verdict, on run-level figures.
const (
	// SaturationMaxCV is the largest throughput CV across runs still read
	// as steady throughput.
	SaturationMaxCV = 0.05
	// SaturationMaxBandWidth is the largest (max-min)/min of the p95 and
	// p99 bands still read as tight.
	SaturationMaxBandWidth = 0.25
	// SaturationMaxDrift is the largest throughput drop from the first
	// run to the last (by start time) still read as steady.
	SaturationMaxDrift = 0.10
)

// ErrNoRuns is returned when Compute gets no input.
var ErrNoRuns = errors.New("no runs given")

// Compute derives the envelope from repeated runs' figures by the
// baseline method: one value per run for throughput, iteration rate and
// requests per iteration (mean, min, max, sample stddev, CV, 95% CI,
// minimum detectable change); http_req_duration percentiles as bands
// (min and max of the run values, never averaged); medians and averages
// as bands with the mean of the run values; failed requests summed over
// runs; a band per endpoint a run has. Runs read from files and runs read
// back from a history take the same path.
func Compute(runs []figures.Run, opts Options) (*Envelope, error) {
	if len(runs) == 0 {
		return nil, ErrNoRuns
	}
	tol := figures.DefaultTolerance()
	if opts.Tolerance != nil {
		tol = *opts.Tolerance
	}
	conf := figures.Confidence(tol.Confidence)
	env := &Envelope{
		APIVersion: APIVersion,
		Kind:       Kind,
		Name:       opts.Name,
		Match:      opts.Match,
		Tolerance:  tol,
		Endpoints:  map[string]Endpoint{},
	}
	var w warnings
	if err := checkRuns(env, runs, opts, &w); err != nil {
		return nil, err
	}
	runSpreads(env, runs, conf, &w)
	latencyAndEndpoints(env, runs, &w)
	env.Saturation = saturation(env, runs, conf)
	env.Warnings = w
	return env, nil
}

// warnings collect what Compute tells the user about its runs.
type warnings []string

func (w *warnings) add(format string, a ...any) { *w = append(*w, fmt.Sprintf(format, a...)) }

// checkRuns refuses runs of different workloads (unless forced), warns
// about too few runs and settings that do not apply, and records the
// provenance.
func checkRuns(env *Envelope, runs []figures.Run, opts Options, w *warnings) error {
	// Workload and metric-set consistency first: a band over different
	// workloads means nothing.
	var diffs []string
	for i := 1; i < len(runs); i++ {
		diffs = append(diffs, figures.WorkloadDiffs(&runs[0], &runs[i])...)
	}
	if len(diffs) > 0 && !opts.Force {
		return fmt.Errorf("runs differ, so they do not form one baseline (use --force to accept):\n  %s", strings.Join(diffs, "\n  "))
	}
	for _, d := range diffs {
		w.add("accepted with --force: %s", d)
	}
	switch n := len(runs); {
	case n == 1:
		w.add("a single run: no run-to-run spread, confidence interval or minimum detectable change can be estimated; repeat the test at least 3 times")
	case n < 3:
		w.add("only %d runs: the confidence interval is wide (t(0.975, %d) = %.2f) and a band of %d values says little; repeat the test at least 3 times", n, n-1, stats.TQuantile(0.975, float64(n-1)), n)
	}
	env.Provenance = provenance(runs, opts)
	checkMatchRuns(opts.Match, runs, w)
	if d, ok := measuredDurationDisagrees(runs, opts.Workload); ok {
		// `k6 inspect` resolves options without the runs' -e values, so a
		// script reading __ENV.DURATION reports its default. compare
		// judges candidates by their measured duration, so the envelope
		// must hold the runs' own, or it would refuse its baseline runs.
		w.add("--k6-options gives a duration of %s but the runs lasted %s on average; recorded %s (run k6 inspect with the same -e/--env values as the runs)", opts.Workload.Duration, d, d)
		env.Provenance.Workload.Duration = d.String()
	}
	if opts.SkipWarmup > 0 && runs[0].Workload.Summary {
		w.add("--skip-warmup %s has no effect on summary files, whose figures cover the whole run; give --out json or csv files to drop the warm-up", opts.SkipWarmup)
	}
	return nil
}

// runSpreads keeps each run's figures and the spread of throughput,
// iteration rate and requests per iteration across runs, and sums the
// errors.
func runSpreads(env *Envelope, runs []figures.Run, conf float64, w *warnings) {
	iterating := 0
	for _, r := range runs {
		env.Runs = append(env.Runs, Run{Run: r})
		if r.Iterations > 0 {
			iterating++
		}
		env.Errors.Failed += r.Failed
		env.Errors.Total += r.Requests
	}
	if n := len(runs); iterating < n {
		w.add("%d of %d runs have no iterations metric: the iteration rate and requests per iteration rest on %d runs", n-iterating, n, iterating)
	}
	env.Throughput = spread(runs, figures.RPS, conf)
	env.Iterations = spread(runs, figures.IterationsPerS, conf)
	env.RequestsPerIteration = spread(runs, figures.RequestsPerIter, conf)
	if env.Errors.Total > 0 {
		env.Errors.Rate = figures.Round(float64(env.Errors.Failed) / float64(env.Errors.Total))
	}
}

// spread summarizes one headline figure, one value per run that has it,
// rounded for the file. Its minimum detectable change is MDC's for as
// many later runs as the baseline has.
func spread(runs []figures.Run, n figures.Name, conf float64) Spread {
	base, typical := figures.Baseline(runs, figures.Key{Figure: n})
	if len(base) == 0 {
		return Spread{}
	}
	xs := make([]float64, len(base))
	for i, b := range base {
		xs[i] = b.X
	}
	s := stats.Summarize(xs, conf)
	mdc, _ := stats.RunLevelMDC(base, typical, len(base), conf)
	cv := s.CV
	if math.IsNaN(cv) {
		cv = 0
	}
	return Spread{
		N: s.N, Mean: figures.Round(s.Mean), Min: figures.Round(s.Min), Max: figures.Round(s.Max),
		StdDev: figures.Round(s.StdDev), CV: figures.Round(cv),
		CILow: figures.Round(s.CILow), CIHigh: figures.Round(s.CIHigh), MDC: figures.Round(mdc),
	}
}

// latencyAndEndpoints adds the overall latency bands and the endpoint
// bands; every run keeps its own value of each endpoint statistic, so
// comparisons measure the run-to-run spread instead of guessing it from
// a band.
func latencyAndEndpoints(env *Envelope, runs []figures.Run, w *warnings) {
	var missing []string
	env.Latency, missing = latencyBands(runs, "")
	if env.Latency.Median.N == 0 && env.Latency.P95.N == 0 {
		w.add("no run has http_req_duration: the latency bands are empty")
	}
	for _, m := range missing {
		w.add("http_req_duration %s", m)
	}
	MaxOutliers(env.Runs)
	keys := map[string]bool{}
	for _, r := range runs {
		for k := range r.Endpoints {
			keys[k] = true
		}
	}
	for _, key := range sortedKeys(keys) {
		var ep Endpoint
		ep.Metric, ep.Tag, ep.Value = figures.EndpointSource(key)
		bands, miss := latencyBands(runs, key)
		ep.Avg, ep.Median, ep.P95, ep.P99, ep.Max = bands.Avg, bands.Median, bands.P95, bands.P99, bands.Max
		ep.Share = share(runs, key)
		env.Endpoints[key] = ep
		for _, m := range miss {
			w.add("endpoint %s: %s", key, m)
		}
	}
	// Bands resting on one run (but more were given) are flagged.
	if len(runs) > 1 {
		for _, name := range sortedKeys(env.Endpoints) {
			if e := env.Endpoints[name]; e.P95.N == 1 || (e.P95.N == 0 && e.Avg.N == 1) {
				w.add("endpoint %s: its band rests on a single run", name)
			}
		}
	}
}

// latencyBands builds the five bands of one trend (the aggregate, or an
// endpoint) over the runs that have it, and says which statistics some
// of those runs lack.
func latencyBands(runs []figures.Run, endpoint string) (Latency, []string) {
	var l Latency
	var missing []string
	bands := map[figures.Name]*Band{figures.Avg: &l.Avg, figures.Median: &l.Median, figures.P95: &l.P95, figures.P99: &l.P99, figures.Max: &l.Max}
	for _, n := range figures.LatencyNames() {
		var xs []float64
		present := 0
		for i := range runs {
			lat, ok := runs[i].Of(endpoint)
			if !ok || !hasLatency(lat) {
				continue
			}
			present++
			if v, _ := lat.Stat(n); v != 0 {
				xs = append(xs, v)
			}
		}
		d := n.Def()
		if present > 0 && len(xs) < present {
			hint := ""
			if d.Quantile > 0 && d.Name != figures.Median {
				hint = fmt.Sprintf(" (add %s to summaryTrendStats)", d.Stat)
			}
			missing = append(missing, fmt.Sprintf("%s is missing in %d of %d runs%s", d.Stat, present-len(xs), present, hint))
		}
		*bands[n] = band(xs, n == figures.Avg || n == figures.Median)
	}
	return l, missing
}

// hasLatency says whether a run's trend holds any statistic at all.
func hasLatency(l figures.Latency) bool {
	for _, n := range figures.LatencyNames() {
		if v, _ := l.Stat(n); v != 0 {
			return true
		}
	}
	return false
}

// band is the min and max of the run values, never an average of
// percentiles; the mean is kept for medians and averages only.
func band(xs []float64, withMean bool) Band {
	if len(xs) == 0 {
		return Band{}
	}
	lo, hi := stats.MinMax(xs)
	b := Band{Min: figures.Round(lo), Max: figures.Round(hi), N: len(xs)}
	if withMean {
		b.Mean = figures.Round(stats.Mean(xs))
	}
	return b
}

// share is an endpoint's share of all requests, where every run that has
// it says how many samples it had; 0 otherwise.
func share(runs []figures.Run, key string) float64 {
	var total, c float64
	for i := range runs {
		total += float64(runs[i].Requests)
		l, ok := runs[i].Endpoints[key]
		if !ok {
			continue
		}
		if l.Count <= 0 {
			return 0
		}
		c += float64(l.Count)
	}
	if total == 0 || c == 0 {
		return 0
	}
	return figures.Round(c / total)
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// provenance records the sources, the workload and the options.
func provenance(runs []figures.Run, opts Options) Provenance {
	p := Provenance{GroupBy: opts.GroupBy}
	if opts.SkipWarmup > 0 {
		p.SkipWarmup = opts.SkipWarmup.String()
	}
	var latest time.Time
	for _, r := range runs {
		s := r.Provenance
		if s.File == "" {
			s.File = r.Source
		}
		for _, t := range []time.Time{s.Start, s.End} {
			if t.After(latest) {
				latest = t
			}
		}
		p.Sources = append(p.Sources, s)
	}
	p.RunsEndedAt = opts.GeneratedAt.UTC()
	if opts.GeneratedAt.IsZero() {
		p.RunsEndedAt = latest
	}

	ref := runs[0].Workload
	p.Workload = Workload{VUs: ref.VUs, Scenarios: ref.Scenarios}
	if d, ok := meanWholeDuration(runs); ok {
		// Workload.Duration is a whole run: the skipped warm-up counts, so
		// candidates are judged by their length before any window.
		p.Workload.Duration = d.String()
	}
	if o := opts.Workload; o != nil {
		// The options file is the script's own word on the load shape.
		if o.VUs > 0 {
			p.Workload.VUs = o.VUs
		}
		if o.Executor != "" {
			p.Workload.Executor = o.Executor
		}
		if len(o.Scenarios) > 0 {
			p.Workload.Scenarios = o.Scenarios
		}
		if o.Duration != "" {
			p.Workload.Duration = o.Duration
		}
	}
	return p
}

// meanWholeDuration is the runs' mean length before any warm-up was cut,
// to the second; ok is false when a run's length is unknown.
func meanWholeDuration(runs []figures.Run) (time.Duration, bool) {
	var sum time.Duration
	for i := range runs {
		if runs[i].DurationSeconds <= 0 {
			return 0, false
		}
		sum += runs[i].WholeDuration()
	}
	return (sum / time.Duration(len(runs))).Round(time.Second), true
}

// measuredDurationDisagrees returns the runs' mean measured duration when
// the options file's is another workload's by the rule comparisons use.
func measuredDurationDisagrees(runs []figures.Run, o *Workload) (time.Duration, bool) {
	if o == nil || o.Duration == "" {
		return 0, false
	}
	want, err := time.ParseDuration(o.Duration)
	if err != nil || want <= 0 {
		return 0, false
	}
	mean, ok := meanWholeDuration(runs)
	if !ok || !figures.DurationsDiffer(mean, want) {
		return 0, false
	}
	return mean, true
}

// MDC is the smallest relative change of a headline figure's mean that a
// comparison detects with later runs like a typical baseline run: the
// run-level log model at the envelope's confidence, 80% power (see
// figures.Baseline). ok is false with fewer than 2 baseline runs.
func (env *Envelope) MDC(n figures.Name, later int) (float64, bool) {
	base, typical := figures.Baseline(env.RunFigures(), figures.Key{Figure: n})
	return stats.RunLevelMDC(base, typical, later, figures.Confidence(env.Tolerance.Confidence))
}
