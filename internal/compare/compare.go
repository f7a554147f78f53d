// Package compare judges candidate k6 runs against a baseline envelope
// (comparisons of later runs, such as a step to more VUs or tasks, with
// the baseline): for each headline and per-endpoint figure,
// the change in percent with a confidence interval over runs, a verdict
// against the envelope's tolerance, the minimum detectable change, and
// Holm's control of the family-wise error across figures. It also fits
// the Universal Scalability Law to runs at several load levels.
package compare

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Verdict is a figure's judgement.
type Verdict string

// Verdicts. Regression means the change is significant in the bad
// direction after Holm's correction within the figure's family and its
// estimate lies beyond the tolerance (an endpoint's median: its change
// against the run's other endpoints, with its own estimate beyond half
// the tolerance too); Improvement that the whole
// confidence interval lies beyond the tolerance on the good side; Pass
// that the bad side of the interval stays within the tolerance;
// Inconclusive anything else. NotJudgeable is a percentile that a
// baseline or candidate run has too few requests to estimate
// (figures.Def.Supported): its values and interval are shown, it takes
// no part in its family's correction, and it is never a Regression.
// NoData is a figure the runs lack.
const (
	Regression   Verdict = "Regression"
	Improvement  Verdict = "Improvement"
	Pass         Verdict = "Pass"
	Inconclusive Verdict = "Inconclusive"
	NotJudgeable Verdict = "NotJudgeable"
	NoData       Verdict = "NoData"
)

// Options tune a comparison.
type Options struct {
	// Tolerance is the policy; zero fields fall back to the envelope's.
	Tolerance figures.Tolerance
	// Method is "welch" (Welch t on log values, the default) or
	// "bootstrap" (percentile bootstrap over runs).
	Method string
	// AllowWorkloadChange accepts candidates whose VUs, scenarios or
	// duration differ from the envelope's (a planned step beyond the baseline).
	AllowWorkloadChange bool
	// Seed makes the bootstrap reproducible.
	Seed uint64
	// SkipWarmup is the warm-up the loader cut from the candidates' point
	// streams, which the result reports.
	SkipWarmup time.Duration
}

// medianWeight is the median's share of the level within an endpoint's
// family; p95 and p99 share the rest. The median moves most reliably
// with a slower release, so it is tested at half the level rather than a
// third; a tail that moves alone is still tested at a quarter, and at
// half once the median is rejected. Chosen by measured error rates
// (docs/compare.md).
const medianWeight = 0.5

// Families of figures that share one Holm correction.
const (
	FamilyHeadline = "headline"
	familyEndpoint = "endpoint"
)

// Figure is one compared figure. Percentages are relative changes
// (candidate/baseline - 1) × 100; for the error rate they are percentage
// points.
type Figure struct {
	Name     figures.Name `json:"name"` // rps, median, p95, p99, error_rate
	Endpoint string       `json:"endpoint,omitempty"`
	// EndpointLabel is the endpoint's display name, when the envelope
	// gives it one (envelope.Endpoint.Label).
	EndpointLabel string  `json:"endpoint_label,omitempty"`
	Unit          string  `json:"unit"`
	Better        string  `json:"better"` // "higher" or "lower"
	Baseline      float64 `json:"baseline"`
	Candidate     float64 `json:"candidate"`
	ChangePct     float64 `json:"change_pct"`
	CILowPct      float64 `json:"ci_low_pct"`
	CIHighPct     float64 `json:"ci_high_pct"`
	MDCPct        float64 `json:"mdc_pct"`
	TolerancePct  float64 `json:"tolerance_pct"`
	P             float64 `json:"p"`      // one-sided p of a change in the bad direction
	PHolm         float64 `json:"p_holm"` // adjusted within the family (Holm; weighted Holm within an endpoint)
	// Family is the set of figures P is corrected within: "headline"
	// (the aggregate figures) or "endpoint <key>" (one endpoint's).
	Family  string  `json:"family"`
	Verdict Verdict `json:"verdict"`
	Method  string  `json:"method"`
	Note    string  `json:"note,omitempty"`
	// Against names the reference an endpoint figure was judged against,
	// "the run's other endpoints (actor_get 85%, …)" with their weights;
	// empty when judged on its own. ChangePct, the interval, MDCPct and P
	// are then those of the endpoint's ratio to the reference, whose
	// levels are Ratio, and Absolute is the endpoint's own change
	// (Baseline and Candidate stay its own values).
	Against  string  `json:"against,omitempty"`
	Absolute *Change `json:"absolute,omitempty"`
	Ratio    *Ratio  `json:"ratio_to_others,omitempty"`
	// beyond: the estimate lies beyond the tolerance in the bad direction.
	beyond bool
}

// Key is the figure's key, "endpoint.figure".
func (f Figure) Key() figures.Key { return figures.Key{Endpoint: f.Endpoint, Figure: f.Name} }

// Label names the figure for people, an endpoint by its display name.
func (f Figure) Label() string { return f.Key().Label(f.EndpointLabel) }

// Result is a whole comparison.
type Result struct {
	Envelope    string   `json:"envelope"`
	Candidates  []string `json:"candidates"`
	BaselineVUs int      `json:"baseline_vus,omitempty"`
	VUs         int      `json:"vus,omitempty"` // candidates' VUs when known and equal
	Confidence  float64  `json:"confidence"`
	Method      string   `json:"method"`
	Figures     []Figure `json:"figures"`
	Sentences   []string `json:"sentences"`
	Warnings    []string `json:"warnings,omitempty"`
	Regressed   bool     `json:"regressed"`
	// SkipWarmup is the warm-up dropped from each candidate's points.
	SkipWarmup string `json:"skip_warmup,omitempty"`
}

// WorkloadError says the candidates ran a different workload.
type WorkloadError struct{ Differences []string }

func (e *WorkloadError) Error() string {
	return "candidate runs are a different workload than the envelope: " + strings.Join(e.Differences, "; ") +
		" (compare like with like, or pass --allow-workload-change for a planned step beyond the baseline)"
}

// Compare judges candidate runs' figures against env's baseline runs.
func Compare(env *envelope.Envelope, runs []figures.Run, opts Options) (*Result, error) {
	return compare(env, runs, opts, judgeConfig{})
}

// compare is Compare with the parts of the judgement jc sets.
func compare(env *envelope.Envelope, runs []figures.Run, opts Options, jc judgeConfig) (*Result, error) {
	if env == nil {
		return nil, errors.New("no envelope")
	}
	if len(runs) == 0 {
		return nil, errors.New("no candidate runs")
	}
	tol := env.Tolerance
	if opts.Tolerance.ThroughputDrop > 0 {
		tol.ThroughputDrop = opts.Tolerance.ThroughputDrop
	}
	if opts.Tolerance.LatencyRise > 0 {
		tol.LatencyRise = opts.Tolerance.LatencyRise
	}
	if opts.Tolerance.ErrorRatio > 0 {
		tol.ErrorRatio = opts.Tolerance.ErrorRatio
	}
	if opts.Tolerance.Confidence > 0 {
		tol.Confidence = opts.Tolerance.Confidence
	}
	tol.Confidence = figures.Confidence(tol.Confidence)
	method := opts.Method
	if method == "" {
		method = "welch"
	}
	if method != "welch" && method != "bootstrap" {
		return nil, fmt.Errorf("method %q: want welch or bootstrap", method)
	}
	res := &Result{Envelope: env.Name, Confidence: tol.Confidence, Method: method, BaselineVUs: env.Provenance.Workload.VUs}
	for _, r := range runs {
		res.Candidates = append(res.Candidates, r.Source)
	}
	if opts.SkipWarmup > 0 {
		res.SkipWarmup = opts.SkipWarmup.String()
	}
	diffs, vus := workloadDiffs(env, runs)
	res.VUs = vus
	if len(diffs) > 0 {
		if !opts.AllowWorkloadChange {
			return nil, &WorkloadError{Differences: diffs}
		}
		res.Warnings = append(res.Warnings, diffs...)
	}
	if len(env.Runs) < 2 {
		return nil, fmt.Errorf("envelope %s has %d baseline run(s): a comparison needs at least 2", env.Name, len(env.Runs))
	}

	c := &comparer{env: env, base: env.RunFigures(), cand: runs, tol: tol, method: method, seed: opts.Seed, res: res, judging: jc.resolved()}
	res.Warnings = append(res.Warnings, env.FormatWarnings()...)
	for _, n := range []figures.Name{figures.RPS, figures.Median, figures.P95, figures.P99} {
		c.headlineFigure(n)
	}
	c.errorFigure()
	names := make([]string, 0, len(env.Endpoints))
	for n := range env.Endpoints {
		names = append(names, n)
	}
	sort.Strings(names)
	found := 0
	for _, n := range names {
		present := false
		for _, fig := range figures.Percentiles() {
			present = c.endpointFigure(figures.Key{Endpoint: n, Figure: fig}) || present
		}
		if present {
			found++
		}
	}
	if len(names) > 0 && found == 0 && !opts.AllowWorkloadChange {
		return nil, &WorkloadError{Differences: []string{fmt.Sprintf("none of the envelope's %d endpoints (%s) appear in the candidate runs", len(names), strings.Join(names, ", "))}}
	}
	c.decide()
	res.sentences()
	return res, nil
}

// decide corrects each family's p-values (Holm's method across the
// headline figures, weighted Holm within each endpoint's) and turns each
// figure's interval and adjusted p into its verdict.
func (c *comparer) decide() {
	res := c.res
	groups := map[string][]int{}
	for i := range res.Figures {
		f := &res.Figures[i]
		f.Family = FamilyHeadline
		if f.Endpoint != "" {
			f.Family = familyEndpoint + " " + f.Endpoint
		}
		key := c.judging.family(f)
		groups[key] = append(groups[key], i)
	}
	alpha := (1 - c.tol.Confidence) / 2 // one-sided, matching the two-sided interval
	for key, idx := range groups {
		ps := make([]float64, len(idx))
		names := make([]figures.Name, len(idx))
		for j, i := range idx {
			ps[j], names[j] = res.Figures[i].P, res.Figures[i].Name
		}
		adj := c.judging.adjust(key, names, ps)
		for j, i := range idx {
			f := &res.Figures[i]
			f.PHolm = adj[j]
			significant := f.PHolm < alpha
			switch {
			case !f.Verdict.Judged():
			case f.beyond && significant:
				f.Verdict = Regression
			case f.Verdict == Regression && !significant, f.beyond && !significant:
				f.Verdict = Inconclusive
				f.Note = joinNote(f.Note, fmt.Sprintf("the estimate is beyond the tolerance, but the change is not significant after Holm's correction across the %d figures of its family (p=%.3g)", countTested(ps), f.PHolm))
			}
			if f.Verdict == Regression {
				res.Regressed = true
			}
		}
	}
}

// Judged says whether the verdict is a judgement of the figure: false
// for a figure without data or one its runs cannot estimate.
func (v Verdict) Judged() bool { return v != NoData && v != NotJudgeable }

// holmWithin corrects one family's p-values: Holm's method across the
// headline figures; within an endpoint's family weighted Holm, the
// median at medianWeight of the level (names are the figures' names).
func holmWithin(family string, names []figures.Name, ps []float64) []float64 {
	if !isEndpointFamily(family) {
		return stats.Holm(ps)
	}
	return stats.WeightedHolm(ps, endpointWeights(names, medianWeight))
}

// isEndpointFamily says whether a family is one endpoint's figures.
func isEndpointFamily(family string) bool {
	return strings.HasPrefix(family, familyEndpoint+" ")
}

// endpointWeights are the shares of the level within an endpoint's
// family: mw for the median, p95 and p99 the rest in equal parts.
func endpointWeights(names []figures.Name, mw float64) []float64 {
	w := make([]float64, len(names))
	for j, n := range names {
		w[j] = (1 - mw) / 2
		if n == figures.Median {
			w[j] = mw
		}
	}
	return w
}

func countTested(ps []float64) int {
	n := 0
	for _, p := range ps {
		if !math.IsNaN(p) {
			n++
		}
	}
	return n
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

type comparer struct {
	env *envelope.Envelope
	// base are the envelope's baseline runs, cand the candidate runs.
	base, cand []figures.Run
	tol        figures.Tolerance
	method     string
	seed       uint64
	judging    judgeConfig
	res        *Result
}

// judgeConfig holds the parts of the judgement as functions: the power
// measurement substitutes them to set the method beside the alternatives
// it was chosen over (docs/compare.md). Its zero value is the method;
// only tests set a field.
type judgeConfig struct {
	// evidence is a figure's one-sided p-value and whether its estimate
	// lies beyond the tolerance in the bad direction: badChange.
	evidence func(r stats.RatioCI, better string, tol float64) (p float64, beyond bool)
	// family is the key of the figures that share one correction: the
	// figure's own family.
	family func(f *Figure) string
	// adjust corrects one family's p-values: holmWithin.
	adjust func(family string, names []figures.Name, ps []float64) []float64
	// interval is the run-level interval of a change: stats.RunLevel.
	interval func(base, cand []stats.RunValue, confidence float64) (stats.RatioCI, error)
	// against says whether an endpoint figure of stat is judged against
	// the run's other endpoints: the median is, the tails are not.
	against func(stat figures.Name) bool
	// ownRise is how far an endpoint's own estimate must have risen for
	// a Regression against the run's other endpoints: half the
	// tolerance (requireAbsolute).
	ownRise func(tol float64) float64
}

// resolved is jc with each part it leaves unset the method's own.
func (jc judgeConfig) resolved() judgeConfig {
	if jc.evidence == nil {
		jc.evidence = badChange
	}
	if jc.family == nil {
		jc.family = func(f *Figure) string { return f.Family }
	}
	if jc.adjust == nil {
		jc.adjust = holmWithin
	}
	if jc.interval == nil {
		jc.interval = stats.RunLevel
	}
	if jc.against == nil {
		jc.against = func(stat figures.Name) bool { return stat == figures.Median }
	}
	if jc.ownRise == nil {
		jc.ownRise = func(tol float64) float64 { return tol / 2 }
	}
	return jc
}

// rangeD2 is the expected range of n standard normal values (d2), for
// n = 2..10; beyond that √n·0.98 is close enough for n ≤ 25.
func rangeD2(n int) float64 {
	d2 := []float64{0, 0, 1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078}
	if n < len(d2) {
		return d2[n]
	}
	return math.Min(0.98*math.Sqrt(float64(n)), 3.9)
}

// judge fills the change, interval, MDC, p-value and the verdict the
// interval alone gives, or NotJudgeable without a p-value for a
// percentile its runs cannot estimate; decide then applies Holm's
// correction within the figure's family. P is the one-sided p of any change in the bad
// direction (badChange).
func (c *comparer) judge(f *Figure, r stats.RatioCI, better string, tol float64) {
	f.ChangePct = 100 * r.Change()
	f.CILowPct = 100 * (r.Low - 1)
	f.CIHighPct = 100 * (r.High - 1)
	f.MDCPct = 100 * r.MDC
	// The interval's own method, plus how the baseline was modelled when
	// the figure says so ("welch-log, baseline spread from …").
	detail := ""
	if rest, ok := strings.CutPrefix(f.Method, "welch-log"); ok {
		detail = rest
	}
	f.Method = r.Method + detail
	if why := c.unestimated(f); why != "" {
		// Shown with its interval, never judged: no p-value enters the
		// family's correction.
		f.Verdict, f.P, f.beyond = NotJudgeable, math.NaN(), false
		f.Note = joinNote(f.Note, why)
		return
	}
	f.P, f.beyond = c.judging.evidence(r, better, tol)
	if better == "lower" {
		switch {
		case r.Low > 1+tol:
			f.Verdict = Regression
		case r.High < 1-tol:
			f.Verdict = Improvement
		case r.High <= 1+tol:
			f.Verdict = Pass
		default:
			f.Verdict = Inconclusive
		}
	} else {
		switch {
		case r.High < 1-tol:
			f.Verdict = Regression
		case r.Low > 1+tol:
			f.Verdict = Improvement
		case r.Low >= 1-tol:
			f.Verdict = Pass
		default:
			f.Verdict = Inconclusive
		}
	}
	if f.Verdict == Inconclusive && r.MDC > tol {
		f.Note = joinNote(f.Note, fmt.Sprintf("the minimum detectable change %.1f%% exceeds the tolerance %.1f%%: more runs are needed", 100*r.MDC, 100*tol))
	}
}

// badChange is a figure's evidence of a change in the bad direction:
// the one-sided p of any change that way, and whether the estimate lies
// beyond the tolerance.
func badChange(r stats.RatioCI, better string, tol float64) (float64, bool) {
	if better == "lower" {
		return r.PAbove(0), r.Ratio > 1+tol
	}
	return r.PBelow(0), r.Ratio < 1-tol
}

// errorFigure compares the failed-request ratio with what the envelope
// allows: its own rate plus the tolerance's error ratio. The interval is
// Wilson's score interval on the pooled candidate requests; the p-value
// is the exact binomial tail P(X ≥ failed | allowed rate).
func (c *comparer) errorFigure() {
	f := c.figure(figures.Key{Figure: figures.ErrorRate}, "", 0)
	f.Method = "binomial (Wilson interval)"
	var failed, total float64
	var missing []string
	for _, r := range c.cand {
		if r.Checked == 0 {
			missing = append(missing, r.Source)
			continue
		}
		failed += float64(r.Failed)
		total += float64(r.Checked)
	}
	allowed := c.env.Errors.Rate + c.tol.ErrorRatio
	f.Baseline = c.env.Errors.Rate
	f.TolerancePct = 100 * c.tol.ErrorRatio
	if len(missing) > 0 || total == 0 {
		f.Verdict, f.Note = NoData, "no http_req_failed in "+strings.Join(missing, ", ")
		c.res.Figures = append(c.res.Figures, f)
		return
	}
	rate := failed / total
	f.Candidate = rate
	f.ChangePct = 100 * (rate - f.Baseline)
	lo, hi := wilson(failed, total, c.tol.Confidence)
	f.CILowPct, f.CIHighPct = 100*(lo-f.Baseline), 100*(hi-f.Baseline)
	f.MDCPct = 100 * (wilsonUpperZero(total, c.tol.Confidence))
	f.P = binomUpperTail(int64(math.Round(failed)), int64(math.Round(total)), allowed)
	switch {
	case failed > 0 && lo > allowed:
		f.Verdict = Regression
	case failed == 0 || hi <= allowed:
		f.Verdict = Pass
	case hi < f.Baseline:
		f.Verdict = Improvement
	default:
		f.Verdict = Inconclusive
	}
	if allowed == 0 && failed > 0 {
		f.Note = fmt.Sprintf("%d of %d requests failed; the envelope allows none", int64(failed), int64(total))
	}
	c.res.Figures = append(c.res.Figures, f)
}

// wilson is the Wilson score interval of k successes in n at confidence.
func wilson(k, n, confidence float64) (float64, float64) {
	z := stats.NormalQuantile(1 - (1-confidence)/2)
	p := k / n
	den := 1 + z*z/n
	centre := (p + z*z/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / den
	return math.Max(0, centre-half), math.Min(1, centre+half)
}

// wilsonUpperZero is the smallest error rate these many requests can
// tell from zero: the Wilson upper bound with no failures.
func wilsonUpperZero(n, confidence float64) float64 {
	_, hi := wilson(0, n, confidence)
	return hi
}

// binomUpperTail is P(X ≥ k) for X ~ Binomial(n, p), summed in log space.
func binomUpperTail(k, n int64, p float64) float64 {
	if k <= 0 {
		return 1
	}
	if p <= 0 {
		return 0
	}
	if p >= 1 {
		return 1
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	ln, _ := math.Lgamma(float64(n + 1))
	var sum float64
	for i := k; i <= n; i++ {
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		term := math.Exp(ln - li - lr + float64(i)*lp + float64(n-i)*lq)
		sum += term
		if term < 1e-18*sum && float64(i) > float64(n)*p {
			break
		}
	}
	return math.Min(1, sum)
}

// workloadDiffs names how the candidates' workload differs from the
// envelope's (VUs, whole duration, by the rules figures sets), and the
// candidates' common VU count.
func workloadDiffs(env *envelope.Envelope, runs []figures.Run) ([]string, int) {
	var diffs []string
	w := env.Provenance.Workload
	want, err := time.ParseDuration(w.Duration)
	if err != nil {
		want = 0
	}
	vus := -1
	for _, r := range runs {
		v := r.Workload.VUs
		if vus == -1 {
			vus = v
		} else if v != vus {
			vus = 0
		}
		if w.VUs > 0 && v > 0 && v != w.VUs {
			diffs = append(diffs, fmt.Sprintf("%s ran %d VUs, the baseline %d", r.Source, v, w.VUs))
		}
		// The envelope's duration is a whole run, warm-up included.
		if whole := r.WholeDuration(); figures.DurationsDiffer(whole, want) {
			diffs = append(diffs, fmt.Sprintf("%s lasted %s, the baseline runs %s", r.Source, whole.Round(time.Second), want))
		}
	}
	if vus < 0 {
		vus = 0
	}
	return diffs, vus
}
