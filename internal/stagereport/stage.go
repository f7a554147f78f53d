// Package stagereport is the per-endpoint, per-stage report of one k6
// run under a ramping workload such as ramping-arrival-rate. It cuts the
// run into the windows of the workload's stages, gives each endpoint's
// latency statistics in each stage, ranks the endpoints by p95 and
// estimates each one's cost from its effective batch size against a
// baseline endpoint. It writes the report as Markdown with a latency
// chart, or as JSON.
package stagereport

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
	"github.com/envelope-dev/envelope/internal/k6options"
	"github.com/envelope-dev/envelope/internal/stats"
)

// StageConfig says how a run's points become a stage report.
type StageConfig struct {
	// Scenario gives the executor and the stage windows (required).
	Scenario *k6options.Scenario
	// GroupBy is the tag naming an endpoint ("name" when empty).
	GroupBy string
	// Baseline is the endpoint cost is relative to; "" picks the
	// endpoint with the smallest effective batch.
	Baseline string
	// BatchMetric is the k6 metric whose samples are batch sizes (a
	// Trend, e.g. recorded from a response header); "batch_size" when
	// both it and BatchTag are empty.
	BatchMetric string
	// BatchTag is a tag on http_req_duration samples holding the batch
	// size, used instead of BatchMetric when set.
	BatchTag string
	// Status selects the samples of the stage stats ("200" when empty).
	Status string
	// Start is the test start; zero means the earliest sample.
	Start time.Time
	// Params are extra settings and stack parameters from a YAML file.
	Params *Params
	// OnlyScenario keeps only samples whose scenario tag is this (samples
	// without the tag are kept); set it when the options file has several
	// scenarios, since the windows are one scenario's.
	OnlyScenario string
	// Staged, when set, gives the scenarios whose stages window the run
	// instead of Scenario: one shared set of windows, or each sample
	// windowed by the stages of its own scenario (its scenario tag).
	Staged *k6options.Staged
	// EndpointOrder lists endpoints in the configured order; others
	// follow in the order of the scenarios they ran in, then of first
	// appearance.
	EndpointOrder []string
}

// StageReport is the per-endpoint report of one run under a staged
// workload. Latency is milliseconds, error rates ratios in [0,1].
type StageReport struct {
	Executor string
	Scenario *k6options.Scenario
	Windows  []k6options.Window
	GroupBy  string
	Status   string
	Start    time.Time
	// LastSample is the offset of the last sample from Start.
	LastSample time.Duration
	Endpoints  []*EndpointStats // configured order (EndpointOrder, scenarios), then first appearance
	// Scenarios are the scenarios whose stages window the run.
	Scenarios []*k6options.Scenario
	// PerScenario is true when the scenarios' stages differ and each
	// sample was windowed by its own scenario's stages.
	PerScenario bool
	// Unscoped counts status-selected samples left out of the stage
	// stats in PerScenario mode because no scenario tag named one of
	// Scenarios.
	Unscoped  int
	Ranking   []*EndpointStats // by p95, fastest first
	Baseline  string           // cost baseline; "" without batch data
	BatchFrom string           // "metric batch_size" or "tag batch"; "" when absent
	Findings  []string
	Warnings  []string
	Params    *Params
}

// EndpointStats are one endpoint's figures.
type EndpointStats struct {
	Name      string
	P95       float64 // all http_req_duration samples of the endpoint
	ErrorRate float64
	Failed    int64
	Requests  int64
	// EffectiveBatch is the mean batch size; nil when the run has none.
	EffectiveBatch *float64
	// CostPct is 100 × baseline batch / this batch; nil without batches.
	CostPct *float64
	Stages  []StageStats
	// Latencies are the selected-status samples, for the chart.
	Latencies []float64
}

// StageStats are one endpoint's latency statistics in one window. A
// stage without samples has Samples 0 and nil statistics.
type StageStats struct {
	// Scenario whose stages define the window (PerScenario reports only).
	Scenario string
	Stage    int
	Target   float64
	Window   k6options.Window
	Samples  int
	Avg      *float64
	P50      *float64
	P95      *float64
	P99      *float64
	Max      *float64
}

// Names of the k6 metrics the report reads.
const (
	metricDuration = k6.HTTPReqDuration
	metricReqs     = "http_reqs"
	metricFailed   = "http_req_failed"
)

type endpointAcc struct {
	st         *EndpointStats
	all        []float64     // every duration sample, for the overall p95
	byStage    [][][]float64 // by scenario (index in the windowed set), then stage
	seen       []bool        // scenarios the endpoint has duration samples in
	firstScen  int           // index of the first scenario it appears in
	reqs       float64
	haveReqs   bool
	failedRate float64
	rateN      int
	statusFail int64
	batch      []float64
}

// BuildStageReport computes the stage report from a run's points.
func BuildStageReport(points []k6.Point, cfg StageConfig) (*StageReport, error) {
	b, err := newStageBuild(cfg)
	if err != nil {
		return nil, err
	}
	if len(points) == 0 {
		return nil, errors.New("the run has no samples: stage statistics need a point stream (k6 --out json or csv)")
	}
	r := b.report(points)
	for i := range points {
		b.add(&points[i])
	}
	if b.before < 0 && !cfg.Start.IsZero() {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s of samples precede --start %s; they are left out of the stage stats", fmtDur(-b.before), cfg.Start.Format(time.RFC3339)))
	}
	// Endpoints that only carry counters (no duration sample) are not
	// endpoints of the report.
	kept := r.Endpoints[:0]
	for _, e := range r.Endpoints {
		if len(b.accs[e.Name].all) > 0 {
			kept = append(kept, e)
		}
	}
	r.Endpoints = kept
	if len(r.Endpoints) == 0 {
		return nil, fmt.Errorf("no %s samples: nothing to report", metricDuration)
	}
	r.order(cfg.EndpointOrder, b.accs)
	if r.Unscoped > 0 {
		if r.Unscoped == b.selected {
			return nil, fmt.Errorf("the scenarios' stages differ, so each sample is windowed by its own scenario, but no status-%s sample has a scenario tag naming one of %s: give --scenario to use one scenario's stages", r.Status, scenarioNames(b.scens))
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d status-%s samples carry no scenario tag naming one of %s and are left out of the stage stats", r.Unscoped, b.selected, r.Status, scenarioNames(b.scens)))
	}
	if err := r.checkCoverage(b.selected-r.Unscoped, b.outside); err != nil {
		return nil, err
	}
	for _, e := range r.Endpoints {
		b.finishEndpoint(e)
	}
	if err := r.costs(cfg, b.batchMetric); err != nil {
		return nil, err
	}
	r.Ranking = append([]*EndpointStats(nil), r.Endpoints...)
	sort.SliceStable(r.Ranking, func(i, j int) bool {
		a, b := r.Ranking[i], r.Ranking[j]
		if a.allFailed() != b.allFailed() {
			return b.allFailed()
		}
		return a.P95 < b.P95
	})
	r.findings()
	return r, nil
}

// stageBuild is the state of one BuildStageReport: the scenarios' stage
// windows and the per-endpoint accumulators.
type stageBuild struct {
	cfg         StageConfig
	r           *StageReport
	scens       []*k6options.Scenario
	perScenario bool
	only        map[string]bool
	scenWindows [][]k6options.Window
	scenIndex   map[string]int
	batchMetric string
	accs        map[string]*endpointAcc

	selected, outside int
	before            time.Duration
}

// newStageBuild resolves the scenarios and their stage windows.
func newStageBuild(cfg StageConfig) (*stageBuild, error) {
	b := &stageBuild{cfg: cfg, scens: []*k6options.Scenario{cfg.Scenario}, only: map[string]bool{},
		scenIndex: map[string]int{}, accs: map[string]*endpointAcc{}}
	if cfg.OnlyScenario != "" {
		b.only[cfg.OnlyScenario] = true
	}
	if st := cfg.Staged; st != nil && len(st.Scenarios) > 0 {
		b.scens, b.perScenario = st.Scenarios, !st.Shared
		if st.Filtered {
			for _, sc := range st.Scenarios {
				b.only[sc.Name] = true
			}
		}
	}
	if b.scens[0] == nil {
		return nil, errors.New("no stage windows: give a k6 inspect options file or a stage list")
	}
	b.scenWindows = make([][]k6options.Window, len(b.scens))
	for i, sc := range b.scens {
		b.scenWindows[i] = sc.Windows()
		if len(b.scenWindows[i]) == 0 {
			return nil, fmt.Errorf("scenario %q (%s) has no stage windows", sc.Name, sc.Executor)
		}
		b.scenIndex[sc.Name] = i
	}
	b.batchMetric = cfg.BatchMetric
	if b.batchMetric == "" && cfg.BatchTag == "" {
		b.batchMetric = "batch_size"
	}
	return b, nil
}

// report starts the report with the configuration's defaults; the run
// starts at its earliest point unless configured.
func (b *stageBuild) report(points []k6.Point) *StageReport {
	cfg, scens := b.cfg, b.scens
	r := &StageReport{
		Executor: scens[0].Executor, Scenario: scens[0], Windows: b.scenWindows[0],
		GroupBy: cfg.GroupBy, Status: cfg.Status, Start: cfg.Start, Params: cfg.Params,
		Scenarios: scens, PerScenario: b.perScenario,
	}
	if b.perScenario {
		r.Windows = mergedWindows(b.scenWindows)
	}
	if execs := executors(scens); len(execs) > 1 {
		r.Executor = strings.Join(execs, ", ")
	}
	if r.GroupBy == "" {
		r.GroupBy = "name"
	}
	if r.Status == "" {
		r.Status = "200"
	}
	if r.Start.IsZero() {
		r.Start = points[0].Time
		for _, p := range points {
			if p.Time.Before(r.Start) {
				r.Start = p.Time
			}
		}
	}
	b.r = r
	return r
}

// acc returns the accumulator of p's endpoint, creating it.
func (b *stageBuild) acc(p *k6.Point) *endpointAcc {
	r := b.r
	name, ok := p.Tags[r.GroupBy]
	if !ok {
		name = "(no " + r.GroupBy + " tag)"
	}
	a := b.accs[name]
	if a == nil {
		a = &endpointAcc{st: &EndpointStats{Name: name}, byStage: make([][][]float64, len(b.scens)), seen: make([]bool, len(b.scens)), firstScen: len(b.scens)}
		for i := range b.scens {
			a.byStage[i] = make([][]float64, len(b.scenWindows[i]))
		}
		b.accs[name] = a
		r.Endpoints = append(r.Endpoints, a.st)
	}
	return a
}

// add accumulates one point.
func (b *stageBuild) add(p *k6.Point) {
	r := b.r
	if len(b.only) > 0 {
		if sc, ok := p.Tags["scenario"]; ok && !b.only[sc] {
			return
		}
	}
	off := p.Time.Sub(r.Start)
	if off > r.LastSample {
		r.LastSample = off
	}
	if off < b.before {
		b.before = off
	}
	switch p.Metric {
	case metricDuration:
		b.addDuration(p, off)
	case metricReqs:
		a := b.acc(p)
		a.reqs += p.Value
		a.haveReqs = true
	case metricFailed:
		a := b.acc(p)
		a.failedRate += p.Value
		a.rateN++
	default:
		if b.batchMetric != "" && p.Metric == b.batchMetric {
			a := b.acc(p)
			a.batch = append(a.batch, p.Value)
		}
	}
}

// addDuration accumulates one request duration at offset off into its
// endpoint and, when its status is selected, its scenario's stage window.
func (b *stageBuild) addDuration(p *k6.Point, off time.Duration) {
	r := b.r
	a := b.acc(p)
	a.all = append(a.all, p.Value)
	si, tagged := b.scenIndex[p.Tags["scenario"]]
	if tagged {
		a.seen[si] = true
		a.firstScen = min(a.firstScen, si)
	}
	if !b.perScenario {
		si, tagged = 0, true
		a.seen[0] = true
	}
	if b.cfg.BatchTag != "" {
		if v, ok := p.Tags[b.cfg.BatchTag]; ok {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				a.batch = append(a.batch, x)
			}
		}
	}
	if s := p.Tags["status"]; s == "" || s == "0" || s >= "400" && len(s) == 3 {
		a.statusFail++
	}
	if p.Tags["status"] != r.Status {
		return
	}
	b.selected++
	a.st.Latencies = append(a.st.Latencies, p.Value)
	if !tagged {
		r.Unscoped++
		return
	}
	ws := b.scenWindows[si]
	idx := -1
	for w := range ws {
		if off >= ws[w].Start && off < ws[w].End {
			idx = w
			break
		}
	}
	if idx < 0 {
		b.outside++
		return
	}
	a.byStage[si][idx] = append(a.byStage[si][idx], p.Value)
}

// finishEndpoint computes an endpoint's totals and stage statistics.
func (b *stageBuild) finishEndpoint(e *EndpointStats) {
	r := b.r
	a := b.accs[e.Name]
	sorted := append([]float64(nil), a.all...)
	sort.Float64s(sorted)
	e.P95 = math.NaN() // an endpoint without selected samples has no p95
	if len(sorted) > 0 {
		e.P95 = stats.Quantile(sorted, 0.95)
	}
	e.Requests = int64(len(a.all))
	if a.haveReqs {
		e.Requests = int64(math.Round(a.reqs))
	}
	if a.rateN > 0 {
		e.Failed = int64(math.Round(a.failedRate))
		e.ErrorRate = a.failedRate / float64(a.rateN)
	} else {
		e.Failed = a.statusFail
		e.ErrorRate = float64(a.statusFail) / float64(len(a.all))
	}
	if len(a.batch) > 0 {
		var s float64
		for _, x := range a.batch {
			s += x
		}
		m := s / float64(len(a.batch))
		e.EffectiveBatch = &m
	}
	var empty []string
	for si := range b.scens {
		if !b.perScenario && si > 0 {
			break // one shared set of windows
		}
		if b.perScenario && !a.seen[si] {
			continue
		}
		for w, win := range b.scenWindows[si] {
			st := stageStats(a.byStage[si][w])
			st.Stage, st.Target, st.Window = win.Stage, win.To, win
			where := fmt.Sprintf("%d (%s)", win.Stage, fmtWindow(win))
			if b.perScenario {
				st.Scenario = b.scens[si].Name
				where = fmt.Sprintf("%d of scenario %s (%s)", win.Stage, b.scens[si].Name, fmtWindow(win))
			}
			if st.Samples == 0 {
				empty = append(empty, where)
			}
			e.Stages = append(e.Stages, st)
		}
	}
	if len(empty) > 0 {
		word := "stage"
		if len(empty) > 1 {
			word = "stages"
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("endpoint %s has no status-%s samples in %s %s", e.Name, r.Status, word, strings.Join(empty, ", ")))
	}
}

// order puts the endpoints in the configured order: the listed names
// first as listed, then by the first scenario each ran in, then by first
// appearance.
func (r *StageReport) order(listed []string, accs map[string]*endpointAcc) {
	pos := map[string]int{}
	for i, n := range listed {
		if _, dup := pos[n]; !dup {
			pos[n] = i
		}
	}
	key := func(e *EndpointStats) (int, int) {
		if i, ok := pos[e.Name]; ok {
			return 0, i
		}
		return 1, accs[e.Name].firstScen
	}
	sort.SliceStable(r.Endpoints, func(i, j int) bool {
		a1, a2 := key(r.Endpoints[i])
		b1, b2 := key(r.Endpoints[j])
		if a1 != b1 {
			return a1 < b1
		}
		return a2 < b2
	})
	var missing []string
	for _, n := range listed {
		if accs[n] == nil || len(accs[n].all) == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("configured endpoints without %s samples (tag %s): %s", metricDuration, r.GroupBy, strings.Join(missing, ", ")))
	}
}

// mergedWindows is every distinct window of several scenarios, by start.
func mergedWindows(sets [][]k6options.Window) []k6options.Window {
	var out []k6options.Window
	seen := map[k6options.Window]bool{}
	for _, ws := range sets {
		for _, w := range ws {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

func executors(scens []*k6options.Scenario) []string {
	var out []string
	for _, sc := range scens {
		if !slices.Contains(out, sc.Executor) {
			out = append(out, sc.Executor)
		}
	}
	return out
}

func scenarioNames(scens []*k6options.Scenario) string {
	names := make([]string, len(scens))
	for i, sc := range scens {
		names[i] = sc.Name
	}
	return strings.Join(names, ", ")
}

// checkCoverage refuses windows that miss most of the run and warns
// about samples outside them or stages the run never reached.
func (r *StageReport) checkCoverage(selected, outside int) error {
	first, last := r.Windows[0], r.Windows[len(r.Windows)-1]
	span := fmt.Sprintf("%s-%s", secs(first.Start), secs(last.End))
	if selected == 0 {
		return fmt.Errorf("no %s samples with status %s: nothing for the stage stats", metricDuration, r.Status)
	}
	if outside*2 > selected {
		return fmt.Errorf("stage windows (%ss) do not cover the run: %d of %d status-%s samples fall outside them (samples run from 0s to %ss after the start %s); check the stages or --start",
			span, outside, selected, r.Status, secs(r.LastSample), r.Start.UTC().Format(time.RFC3339))
	}
	if outside > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d status-%s samples (%.1f%%) fall outside the stage windows (%ss; last sample at %ss) and are left out of the stage stats",
			outside, selected, r.Status, 100*float64(outside)/float64(selected), span, secs(r.LastSample)))
	}
	for _, w := range r.Windows {
		if w.Start > r.LastSample {
			r.Warnings = append(r.Warnings, fmt.Sprintf("stage %d (%s) starts after the last sample at %ss: the run ended early or the windows are wrong", w.Stage, fmtWindow(w), secs(r.LastSample)))
		}
	}
	return nil
}

func (r *StageReport) costs(cfg StageConfig, batchMetric string) error {
	names := make([]string, len(r.Endpoints))
	var withBatch []*EndpointStats
	for i, e := range r.Endpoints {
		names[i] = e.Name
		if e.EffectiveBatch != nil {
			withBatch = append(withBatch, e)
		}
	}
	var base *EndpointStats
	if cfg.Baseline != "" {
		for _, e := range r.Endpoints {
			if e.Name == cfg.Baseline {
				base = e
			}
		}
		if base == nil {
			return fmt.Errorf("baseline endpoint %q does not exist; endpoints (tag %s): %s", cfg.Baseline, r.GroupBy, strings.Join(names, ", "))
		}
	}
	src := "metric " + batchMetric
	if cfg.BatchTag != "" {
		src = "tag " + cfg.BatchTag
	}
	if len(withBatch) == 0 {
		if cfg.BatchMetric != "" || cfg.BatchTag != "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("no batch sizes found (%s): the cost columns are left out", src))
		}
		return nil
	}
	r.BatchFrom = src
	if base == nil {
		base = withBatch[0]
		for _, e := range withBatch[1:] {
			if *e.EffectiveBatch < *base.EffectiveBatch {
				base = e
			}
		}
	}
	if base.EffectiveBatch == nil || *base.EffectiveBatch <= 0 {
		return fmt.Errorf("baseline endpoint %q has no positive batch size (%s): cost cannot be relative to it", base.Name, src)
	}
	r.Baseline = base.Name
	for _, e := range withBatch {
		if *e.EffectiveBatch <= 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("endpoint %s has effective batch %.2f: no cost figure", e.Name, *e.EffectiveBatch))
			continue
		}
		c := 100 * *base.EffectiveBatch / *e.EffectiveBatch
		e.CostPct = &c
	}
	for _, e := range r.Endpoints {
		if e.EffectiveBatch == nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("endpoint %s has no batch sizes (%s): its cost is not shown", e.Name, src))
		}
	}
	return nil
}

// allFailed reports whether every request of the endpoint failed: it
// answers fast only because it fails, so it ranks after every endpoint
// that served requests.
func (e *EndpointStats) allFailed() bool { return e.Requests > 0 && e.Failed >= e.Requests }

// RankingRule states the order of the ranking and the p95 finding.
const RankingRule = "Endpoints are ranked by the p95 of all their requests, fastest first; an endpoint whose every request failed ranks last, since it answers fast only by failing. The fastest-p95 finding follows the same rule."

// findings names the best endpoint for p95, cost and error rate; values
// equal as displayed are named as a tie.
func (r *StageReport) findings() {
	best := func(key func(*EndpointStats) (float64, bool), show func(float64) string) (string, []string) {
		var bestV float64
		var names []string
		for _, e := range r.Endpoints {
			v, ok := key(e)
			if !ok {
				continue
			}
			switch {
			case names == nil:
				bestV, names = v, []string{e.Name}
			case show(v) == show(bestV):
				names = append(names, e.Name)
			case v < bestV:
				bestV, names = v, []string{e.Name}
			}
		}
		if names == nil {
			return "", nil
		}
		return show(bestV), names
	}
	say := func(what, tieWhat, suffix string, v string, names []string) {
		if len(names) == 1 {
			r.Findings = append(r.Findings, fmt.Sprintf("%s: **%s** at **%s**%s.", what, names[0], v, suffix))
		} else if len(names) > 1 {
			r.Findings = append(r.Findings, fmt.Sprintf("%s is a tie at **%s**%s across: **%s**.", tieWhat, v, suffix, strings.Join(names, ", ")))
		}
	}
	// An endpoint whose every request failed answers fast because it fails
	// (a 404 in microseconds): it is no candidate for the fastest p95.
	v, n := best(func(e *EndpointStats) (float64, bool) { return e.P95, !e.allFailed() }, func(x float64) string { return fmt.Sprintf("%.2f ms", x) })
	say("Fastest p95 endpoint", "Fastest p95", "", v, n)
	if r.Baseline != "" {
		v, n = best(func(e *EndpointStats) (float64, bool) {
			if e.CostPct == nil {
				return 0, false
			}
			return *e.CostPct, true
		}, func(x float64) string { return fmt.Sprintf("%.2f%%", x) })
		say("Most cost-efficient endpoint (estimate)", "Most cost-efficient (estimate)", " of "+r.Baseline+" baseline", v, n)
	}
	v, n = best(func(e *EndpointStats) (float64, bool) { return e.ErrorRate, true }, func(x float64) string { return fmt.Sprintf("%.3f%%", 100*x) })
	say("Lowest observed error rate", "Lowest observed error rate", "", v, n)
}

// stageStats computes count, mean and type-7 percentiles of samples.
func stageStats(xs []float64) StageStats {
	st := StageStats{Samples: len(xs)}
	if len(xs) == 0 {
		return st
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	f := func(v float64) *float64 { return &v }
	st.Avg = f(sum / float64(len(s)))
	st.P50 = f(stats.Quantile(s, 0.50))
	st.P95 = f(stats.Quantile(s, 0.95))
	st.P99 = f(stats.Quantile(s, 0.99))
	st.Max = f(s[len(s)-1])
	return st
}
