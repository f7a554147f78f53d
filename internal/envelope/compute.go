package envelope

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Input is one run with the provenance of the file it came from.
type Input struct {
	Run    *k6.Run
	Source Source // File (relative name), SHA256, Format, ...
}

// Options steer Compute.
type Options struct {
	Name       string
	Match      string        // label matchers of the tests the envelope judges (Envelope.Match)
	GroupBy    string        // tag whose values become endpoint bands ("" = none)
	SkipWarmup time.Duration // recorded in provenance; the loader applied it
	// Force accepts runs whose workloads or metric sets differ; the
	// differences become warnings instead of an error.
	Force bool
	// Workload from a `k6 inspect` options file; nil when not given.
	Workload *Workload
	// GeneratedAt overrides the provenance date; zero means the latest
	// time the sources tell (absent when none does).
	GeneratedAt time.Time
	// Tolerance to write; nil means DefaultTolerance().
	Tolerance *Tolerance
}

// Limits of the saturation verdict, on run-level figures.
const (
	// SaturationMaxCV is the largest throughput CV across runs still read
	// as steady throughput.
	SaturationMaxCV = 0.05
	// SaturationMaxBandWidth is the largest (max-min)/min of the p95 and
	// p99 bands still read as tight.
	SaturationMaxBandWidth = 0.25
	// SaturationMaxDrift is the largest change between the first and the
	// second half of a run (throughput drop, p95 rise) still read as steady.
	SaturationMaxDrift = 0.10
)

// ErrNoRuns is returned when Compute gets no input.
var ErrNoRuns = errors.New("no runs given")

// isBuiltin tells k6's own metrics from a script's: every custom trend
// becomes an endpoint band, as the reference baseline report's "Actor
// GET", "Auth login" and the rest are.
func isBuiltin(name string) bool {
	_, _, ok := k6.Builtin(name)
	return ok
}

// Compute derives the envelope from repeated runs by the baseline
// method: one value per run for throughput, iteration rate and requests
// per iteration (mean, min, max, sample stddev, CV, 95% CI, minimum
// detectable change); http_req_duration percentiles as bands (min and max
// of the run values, never averaged); medians and averages as bands with
// the mean of the run values; failed requests summed over runs; a band per
// custom trend and per --group-by tag value.
func Compute(in []Input, opts Options) (*Envelope, error) {
	if len(in) == 0 {
		return nil, ErrNoRuns
	}
	tol := DefaultTolerance()
	if opts.Tolerance != nil {
		tol = *opts.Tolerance
	}
	conf := tol.Confidence
	if conf <= 0 || conf >= 1 {
		conf = 0.95
	}
	env := &Envelope{
		APIVersion: APIVersion,
		Kind:       Kind,
		Name:       opts.Name,
		Match:      opts.Match,
		Tolerance:  tol,
		Endpoints:  map[string]Endpoint{},
	}
	var w warnings
	if err := checkRuns(env, in, opts, &w); err != nil {
		return nil, err
	}
	if err := runSpreads(env, in, conf, &w); err != nil {
		return nil, err
	}
	latencyAndEndpoints(env, in, opts, conf, &w)
	env.Saturation = saturation(env, in)
	env.Warnings = w
	return env, nil
}

// warnings collect what Compute tells the user about its runs.
type warnings []string

func (w *warnings) add(format string, a ...any) { *w = append(*w, fmt.Sprintf(format, a...)) }

// checkRuns refuses runs of different workloads (unless forced), warns
// about too few runs and settings that do not apply, and records the
// provenance.
func checkRuns(env *Envelope, in []Input, opts Options, w *warnings) error {
	// Workload and metric-set consistency first: a band over different
	// workloads means nothing.
	diffs := compareRuns(in)
	if len(diffs) > 0 && !opts.Force {
		return fmt.Errorf("runs differ, so they do not form one baseline (use --force to accept):\n  %s", strings.Join(diffs, "\n  "))
	}
	for _, d := range diffs {
		w.add("accepted with --force: %s", d)
	}
	switch n := len(in); {
	case n == 1:
		w.add("a single run: no run-to-run spread, confidence interval or minimum detectable change can be estimated; repeat the test at least 3 times")
	case n < 3:
		w.add("only %d runs: the confidence interval is wide (t(0.975, %d) = %.2f) and a band of %d values says little; repeat the test at least 3 times", n, n-1, stats.TQuantile(0.975, float64(n-1)), n)
	}
	env.Provenance = provenance(in, opts)
	checkMatchRuns(opts.Match, in, w)
	if d, ok := measuredDurationDisagrees(in, opts.Workload, skippedWarmup(in, opts)); ok {
		// `k6 inspect` resolves options without the runs' -e values, so a
		// script reading __ENV.DURATION reports its default. compare
		// judges candidates by their measured duration, so the envelope
		// must hold the runs' own, or it would refuse its baseline runs.
		w.add("--k6-options gives a duration of %s but the runs lasted %s on average; recorded %s (run k6 inspect with the same -e/--env values as the runs)", opts.Workload.Duration, d, d)
		env.Provenance.Workload.Duration = d.String()
	}
	if opts.SkipWarmup > 0 && in[0].Run.Mode == k6.ModeSummary {
		w.add("--skip-warmup %s has no effect on summary files, whose figures cover the whole run; give --out json or csv files to drop the warm-up", opts.SkipWarmup)
	}
	return nil
}

// runSpreads records each run's figures and the spread of throughput,
// iteration rate and requests per iteration across runs, and sums the
// errors.
func runSpreads(env *Envelope, in []Input, conf float64, w *warnings) error {
	var rps, ips, rpi []float64
	for _, r := range in {
		f, err := runFigures(r)
		if err != nil {
			return err
		}
		env.Runs = append(env.Runs, f)
		rps = append(rps, f.RPS)
		if f.Iterations > 0 {
			ips = append(ips, f.IterationsPerS)
			rpi = append(rpi, f.RequestsPerIter)
		}
		env.Errors.Failed += f.Failed
		env.Errors.Total += f.Requests
	}
	if n := len(in); len(ips) < n {
		w.add("%d of %d runs have no iterations metric: the iteration rate and requests per iteration rest on %d runs", n-len(ips), n, len(ips))
	}
	env.Throughput = spread(rps, conf)
	env.Iterations = spread(ips, conf)
	env.RequestsPerIteration = spread(rpi, conf)
	if env.Errors.Total > 0 {
		env.Errors.Rate = round6(float64(env.Errors.Failed) / float64(env.Errors.Total))
	}
	return nil
}

// latencyAndEndpoints adds the overall latency bands and the endpoint
// bands, with every run's own value of each endpoint statistic.
func latencyAndEndpoints(env *Envelope, in []Input, opts Options, conf float64, w *warnings) {
	var missing []string
	env.Latency, missing = latencyBands(in, func(r *k6.Run) *k6.Metric { return r.Metrics[k6.HTTPReqDuration] })
	if env.Latency.Median.N == 0 && env.Latency.P95.N == 0 {
		w.add("no run has http_req_duration: the latency bands are empty")
	}
	for _, m := range missing {
		w.add("http_req_duration %s", m)
	}
	for i := range env.Runs {
		env.Runs[i].MaxOutlier = env.Latency.P99.N > 0 && env.Runs[i].Max > env.Latency.P99.Max
	}

	// Endpoint bands: custom trends, tagged sub-metrics, --group-by values.
	keys := endpointKeys(in, opts.GroupBy)
	for _, key := range keys {
		ep := key.ep
		bands, miss := latencyBands(in, key.get)
		ep.Avg, ep.Median, ep.P95, ep.P99, ep.Max = bands.Avg, bands.Median, bands.P95, bands.P99, bands.Max
		env.Endpoints[key.name] = ep
		for _, m := range miss {
			w.add("endpoint %s: %s", key.name, m)
		}
	}
	env.Endpoints = withShares(env.Endpoints, in, opts.GroupBy)
	// Every run's own value of every endpoint statistic, so comparisons
	// measure the run-to-run spread instead of guessing it from a band.
	fillRunValues(env, in, keys, conf)

	// Bands resting on one run (but more were given) are flagged.
	if len(in) > 1 {
		for _, name := range sortedKeys(env.Endpoints) {
			if e := env.Endpoints[name]; e.P95.N == 1 || (e.P95.N == 0 && e.Avg.N == 1) {
				w.add("endpoint %s: its band rests on a single run", name)
			}
		}
	}
}

// spread summarizes one value per run, rounded for the file.
func spread(xs []float64, conf float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := stats.Summarize(xs, conf)
	mdc := stats.MDC(len(xs), s.CV, 1-conf, 0.8)
	if math.IsNaN(mdc) {
		mdc = 0
	}
	cv := s.CV
	if math.IsNaN(cv) {
		cv = 0
	}
	return Spread{
		N: s.N, Mean: round6(s.Mean), Min: round6(s.Min), Max: round6(s.Max),
		StdDev: round6(s.StdDev), CV: round6(cv),
		CILow: round6(s.CILow), CIHigh: round6(s.CIHigh), MDC: round6(mdc),
	}
}

// round6 keeps six significant digits: the file stays readable and
// byte-stable, and no figure the baseline report quotes loses a digit.
func round6(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return v
}

// runFigures reads one run's headline figures.
func runFigures(in Input) (RunFigures, error) {
	r := in.Run
	name := in.Source.File
	f := RunFigures{Source: name, DurationSeconds: round6(r.Duration.Seconds())}
	reqs := r.Metrics["http_reqs"]
	if reqs == nil {
		return f, fmt.Errorf("%s: no http_reqs metric: the envelope's throughput is each run's http_reqs rate, so a run must have made HTTP requests (and the metric must not be filtered out of the file)", name)
	}
	count, ok := reqs.Values["count"]
	if !ok {
		return f, fmt.Errorf("%s: metric http_reqs: field count is missing", name)
	}
	rate, ok := reqs.Values["rate"]
	if !ok || rate <= 0 {
		if r.Duration <= 0 {
			return f, fmt.Errorf("%s: metric http_reqs: field rate is missing and the run's duration is unknown", name)
		}
		rate = count / r.Duration.Seconds()
	}
	f.Requests = int64(math.Round(count))
	f.RPS = round6(rate)
	if it := r.Metrics["iterations"]; it != nil {
		c := it.Values["count"]
		ir, ok := it.Values["rate"]
		if !ok && r.Duration > 0 {
			ir = c / r.Duration.Seconds()
		}
		f.Iterations = int64(math.Round(c))
		f.IterationsPerS = round6(ir)
		if c > 0 {
			f.RequestsPerIter = round6(count / c)
		}
	}
	if fm := r.Metrics["http_req_failed"]; fm != nil {
		f.Failed = int64(math.Round(fm.Values["passes"]))
	}
	if d := r.Metrics[k6.HTTPReqDuration]; d != nil {
		f.Avg = round6(d.Values["avg"])
		f.Median = round6(d.Values["med"])
		f.P95 = round6(d.Values["p(95)"])
		f.P99 = round6(d.Values["p(99)"])
		f.Max = round6(d.Values["max"])
	}
	return f, nil
}

// latencyBands builds the five bands of one trend over the runs that have
// it, and says which statistics some runs lack.
func latencyBands(in []Input, get func(*k6.Run) *k6.Metric) (Latency, []string) {
	var l Latency
	var missing []string
	for _, st := range []struct {
		key  string
		band *Band
		mean bool
	}{
		{"avg", &l.Avg, true}, {"med", &l.Median, true}, {"p(95)", &l.P95, false},
		{"p(99)", &l.P99, false}, {"max", &l.Max, false},
	} {
		var xs []float64
		present := 0
		for _, r := range in {
			m := get(r.Run)
			if m == nil {
				continue
			}
			present++
			if v, ok := m.Values[st.key]; ok && !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		if present > 0 && len(xs) < present {
			hint := ""
			if strings.HasPrefix(st.key, "p(") {
				hint = fmt.Sprintf(" (add %s to summaryTrendStats)", st.key)
			}
			missing = append(missing, fmt.Sprintf("%s is missing in %d of %d runs%s", st.key, present-len(xs), present, hint))
		}
		*st.band = band(xs, st.mean)
	}
	return l, missing
}

// band is the min and max of the run values, never an average of
// percentiles; the mean is kept for medians and averages only.
func band(xs []float64, withMean bool) Band {
	if len(xs) == 0 {
		return Band{}
	}
	lo, hi := stats.MinMax(xs)
	b := Band{Min: round6(lo), Max: round6(hi), N: len(xs)}
	if withMean {
		b.Mean = round6(stats.Mean(xs))
	}
	return b
}

type endpointKey struct {
	name string
	ep   Endpoint
	get  func(*k6.Run) *k6.Metric
}

// endpointKeys lists the endpoint bands to build, in a stable order:
// custom trend metrics by name, then http_req_duration sub-metrics with
// one tag (other than expected_response), then --group-by values.
func endpointKeys(in []Input, groupBy string) []endpointKey {
	trends := map[string]bool{}
	subs := map[string][2]string{}
	groups := map[string]bool{}
	for _, r := range in {
		for name, m := range r.Run.Metrics {
			switch {
			case m.Type == k6.Trend && m.Parent == name && !isBuiltin(name) && m.Contains != k6.Data:
				trends[name] = true
			case m.Parent == k6.HTTPReqDuration && len(m.Tags) == 1:
				for t, v := range m.Tags {
					if t != "expected_response" {
						subs[name] = [2]string{t, v}
					}
				}
			}
		}
		if groupBy != "" && r.Run.GroupBy == groupBy {
			for v, ms := range r.Run.Groups {
				if ms[k6.HTTPReqDuration] != nil {
					groups[v] = true
				}
			}
		}
	}
	var keys []endpointKey
	for _, name := range sortedKeys(trends) {
		keys = append(keys, endpointKey{name: name, ep: Endpoint{Metric: name},
			get: func(r *k6.Run) *k6.Metric { return r.Metrics[name] }})
	}
	taken := map[string]bool{}
	for _, name := range sortedKeys(subs) {
		tv := subs[name]
		key := tv[0] + "=" + tv[1]
		taken[key] = true
		keys = append(keys, endpointKey{name: key, ep: Endpoint{Tag: tv[0], Value: tv[1]},
			get: func(r *k6.Run) *k6.Metric { return r.Metrics[name] }})
	}
	dup := duplicateGroups(in, groupBy, sortedKeys(trends), sortedKeys(groups))
	for _, v := range sortedKeys(groups) {
		key := groupBy + "=" + v
		if taken[key] || dup[v] {
			continue // the same band already came from a sub-metric or a custom trend
		}
		keys = append(keys, endpointKey{name: key, ep: Endpoint{Tag: groupBy, Value: v},
			get: func(r *k6.Run) *k6.Metric {
				if r.GroupBy != groupBy {
					return nil
				}
				return r.Groups[v][k6.HTTPReqDuration]
			}})
	}
	return keys
}

// duplicateGroups finds the --group-by values whose http_req_duration
// samples are exactly a custom trend's in every run: a script with one
// Trend per endpoint, fed the request's duration and tagged by name,
// would otherwise list every endpoint twice, and compare would judge
// each figure twice and spend its Holm budget on the copies. The custom
// trend is kept. Runs without points cannot tell, so nothing is dropped.
func duplicateGroups(in []Input, groupBy string, trends, groups []string) map[string]bool {
	dup := map[string]bool{}
	if groupBy == "" || len(trends) == 0 || len(groups) == 0 {
		return dup
	}
	same := map[[2]string]bool{} // {group value, trend}: equal so far
	for _, v := range groups {
		for _, tr := range trends {
			same[[2]string{v, tr}] = true
		}
	}
	for _, r := range in {
		if len(r.Run.Points) == 0 {
			return map[string]bool{}
		}
		byTrend := map[string][]float64{}
		byGroup := map[string][]float64{}
		for _, p := range r.Run.Points {
			if p.Metric == k6.HTTPReqDuration {
				if v, ok := p.Tags[groupBy]; ok {
					byGroup[v] = append(byGroup[v], p.Value)
				}
				continue
			}
			if slices.Contains(trends, p.Metric) {
				byTrend[p.Metric] = append(byTrend[p.Metric], p.Value)
			}
		}
		for _, xs := range byTrend {
			slices.Sort(xs)
		}
		for _, xs := range byGroup {
			slices.Sort(xs)
		}
		for k, ok := range same {
			if ok {
				g, t := byGroup[k[0]], byTrend[k[1]]
				same[k] = len(g) > 0 && slices.Equal(g, t)
			}
		}
	}
	for k, ok := range same {
		if ok {
			dup[k[0]] = true
		}
	}
	return dup
}

// withShares fills each endpoint's share of all requests where the files
// tell: a custom trend's count, or a group's http_reqs count.
func withShares(eps map[string]Endpoint, in []Input, groupBy string) map[string]Endpoint {
	var total float64
	for _, r := range in {
		if m := r.Run.Metrics["http_reqs"]; m != nil {
			total += m.Values["count"]
		}
	}
	if total == 0 {
		return eps
	}
	for name, ep := range eps {
		var c float64
		known := true
		for _, r := range in {
			var m *k6.Metric
			switch {
			case ep.Metric != "":
				m = r.Run.Metrics[ep.Metric]
			case r.Run.GroupBy == ep.Tag && ep.Tag != "":
				m = r.Run.Groups[ep.Value]["http_reqs"]
			}
			if m == nil {
				continue
			}
			v, ok := m.Values["count"]
			if !ok {
				known = false
				break
			}
			c += v
		}
		if known && c > 0 {
			ep.Share = round6(c / total)
			eps[name] = ep
		}
	}
	return eps
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// runWorkload is what one run's file tells of its workload.
type runWorkload struct {
	vus       int
	scenarios []string
	metrics   []string
}

func workloadOf(r *k6.Run) runWorkload {
	var w runWorkload
	for _, name := range []string{"vus_max", "vus"} {
		if m := r.Metrics[name]; m != nil {
			if v, ok := m.Values["max"]; ok {
				w.vus = int(math.Round(v))
				break
			}
		}
	}
	sc := map[string]bool{}
	for name, m := range r.Metrics {
		if m.Parent == name {
			w.metrics = append(w.metrics, name)
		}
		if s, ok := m.Tags["scenario"]; ok {
			sc[s] = true
		}
	}
	if r.GroupBy == "scenario" {
		for v := range r.Groups {
			sc[v] = true
		}
	}
	for _, p := range r.Points {
		if s := p.Tags["scenario"]; s != "" {
			sc[s] = true
		}
	}
	w.scenarios = sortedKeys(sc)
	sort.Strings(w.metrics)
	return w
}

// compareRuns names every way a run's workload or metric set differs
// from the first run's.
func compareRuns(in []Input) []string {
	if len(in) < 2 {
		return nil
	}
	ref := workloadOf(in[0].Run)
	refName := in[0].Source.File
	var diffs []string
	for _, r := range in[1:] {
		w := workloadOf(r.Run)
		name := r.Source.File
		if ref.vus != 0 && w.vus != 0 && ref.vus != w.vus {
			diffs = append(diffs, fmt.Sprintf("VUs: %s has %d, %s has %d", refName, ref.vus, name, w.vus))
		}
		if len(ref.scenarios) > 0 && len(w.scenarios) > 0 && !slices.Equal(ref.scenarios, w.scenarios) {
			diffs = append(diffs, fmt.Sprintf("scenarios: %s has [%s], %s has [%s]", refName, strings.Join(ref.scenarios, ", "), name, strings.Join(w.scenarios, ", ")))
		}
		if only, extra := setDiff(ref.metrics, w.metrics); len(only)+len(extra) > 0 {
			var parts []string
			if len(only) > 0 {
				parts = append(parts, fmt.Sprintf("%s lacks %s", name, strings.Join(only, ", ")))
			}
			if len(extra) > 0 {
				parts = append(parts, fmt.Sprintf("%s has %s that %s lacks", name, strings.Join(extra, ", "), refName))
			}
			diffs = append(diffs, "metric set: "+strings.Join(parts, "; "))
		}
		if a, b := in[0].Run.Duration, r.Run.Duration; a > 0 && b > 0 && math.Abs(a.Seconds()-b.Seconds()) > 0.1*math.Max(a.Seconds(), b.Seconds()) {
			d := fmt.Sprintf("duration: %s ran %s, %s ran %s", refName, a.Round(time.Second), name, b.Round(time.Second))
			if (in[0].Run.Mode == k6.ModeSummary) != (r.Run.Mode == k6.ModeSummary) {
				// A summary always covers the whole run; --skip-warmup,
				// --from and --to only cut point streams.
				d += " (a summary file covers the whole run, while --skip-warmup/--from/--to cut only point streams: mix the two kinds without a window, or use one kind)"
			}
			diffs = append(diffs, d)
		}
	}
	return diffs
}

// setDiff returns the items of a missing from b and the items of b missing from a.
func setDiff(a, b []string) (onlyA, onlyB []string) {
	inA := map[string]bool{}
	for _, x := range a {
		inA[x] = true
	}
	inB := map[string]bool{}
	for _, x := range b {
		inB[x] = true
		if !inA[x] {
			onlyB = append(onlyB, x)
		}
	}
	for _, x := range a {
		if !inB[x] {
			onlyA = append(onlyA, x)
		}
	}
	return onlyA, onlyB
}

// provenance records the sources, the workload and the options.
func provenance(in []Input, opts Options) Provenance {
	p := Provenance{GroupBy: opts.GroupBy}
	if opts.SkipWarmup > 0 {
		p.SkipWarmup = opts.SkipWarmup.String()
	}
	var latest time.Time
	for _, r := range in {
		s := r.Source
		if s.Format == "" {
			s.Format = string(r.Run.Format)
		}
		if s.K6Version == "" {
			s.K6Version = r.Run.K6Version
		}
		if s.Start.IsZero() {
			s.Start = r.Run.Start.UTC()
		}
		if s.End.IsZero() {
			s.End = r.Run.End.UTC()
		}
		if s.TestID == "" {
			s.TestID = testID(r.Run)
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

	ref := workloadOf(in[0].Run)
	p.Workload = Workload{VUs: ref.vus, Scenarios: ref.scenarios}
	if d := in[0].Run.Duration; d > 0 {
		var sum time.Duration
		for _, r := range in {
			sum += r.Run.Duration
		}
		// Workload.Duration is a whole run: the skipped warm-up counts, so
		// candidates are judged by their length before any window.
		p.Workload.Duration = (sum/time.Duration(len(in)) + skippedWarmup(in, opts)).Round(time.Second).String()
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

// testID is the run's testid tag when its points carry one.
func testID(r *k6.Run) string {
	for _, p := range r.Points {
		if id := p.Tags["testid"]; id != "" {
			return id
		}
	}
	return ""
}

// measuredDurationDisagrees returns the runs' mean measured duration when
// the options file's duration is outside 0.75–1.25 of it, the bounds
// compare uses to tell a different workload.
func measuredDurationDisagrees(in []Input, o *Workload, skipped time.Duration) (time.Duration, bool) {
	if o == nil || o.Duration == "" {
		return 0, false
	}
	want, err := time.ParseDuration(o.Duration)
	if err != nil || want <= 0 {
		return 0, false
	}
	var sum time.Duration
	for _, r := range in {
		if r.Run.Duration <= 0 {
			return 0, false
		}
		sum += r.Run.Duration
	}
	mean := (sum/time.Duration(len(in)) + skipped).Round(time.Second)
	if ratio := mean.Seconds() / want.Seconds(); ratio >= 0.75 && ratio <= 1.25 {
		return 0, false
	}
	return mean, true
}

// skippedWarmup is the warm-up the loader cut from the runs' measured
// durations: none for summary files, which always cover the whole run.
func skippedWarmup(in []Input, opts Options) time.Duration {
	if opts.SkipWarmup <= 0 || len(in) == 0 || in[0].Run.Mode == k6.ModeSummary {
		return 0
	}
	return opts.SkipWarmup
}
