// Package changepoint finds where the level of a figure changed across a
// test's runs in commit order, which runs were lone outliers, and how far
// a figure drifted since a given run. It starts from E-Divisive means in
// sliding windows with a Student t significance (the method of Apache
// Otava), and adds what that method lacks: a lone outlier run is never a
// change, a change needs runs after it, each run's own measurement error
// weighs its value, a percentile is analysed only from runs with requests
// enough to estimate it, an endpoint's latency figures are judged as one
// hypothesis, the false discovery rate is controlled across the
// hypotheses of one test, a step seen but not decided is reported as
// suspected with the runs that would decide it, every figure has a
// polarity, and appending a run re-analyses only the windows it touches.
//
// The package holds no store: a caller appends runs to an Analyzer (one
// per test) and reads its Result.
package changepoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Direction labels a change or an outlier for its figure's polarity.
type Direction string

// Directions.
const (
	Regression  Direction = "regression"
	Improvement Direction = "improvement"
)

// Key names one series: a figure of a test, aggregate (Endpoint empty)
// or of one endpoint.
type Key struct {
	Test     string       `json:"-"`
	Figure   figures.Name `json:"figure"`
	Endpoint string       `json:"endpoint"`
}

// Figures is the series' figure key.
func (k Key) Figures() figures.Key { return figures.Key{Endpoint: k.Endpoint, Figure: k.Figure} }

// String is the figure's key, "endpoint.figure".
func (k Key) String() string { return k.Figures().String() }

// Run is one run's value of a series.
type Run struct {
	// Index is the run's 1-based place in the analysed line, for a series
	// that lacks some of the line's runs (an endpoint a run did not
	// call); 0 means its place in the series.
	Index int
	// TestID is the run's id, passed through to the results.
	TestID string
	// Commit identifies the run in change-point ids; the caller's run id
	// when commits repeat.
	Commit string
	Value  float64
	// Count is the number of requests behind the value (0 = unknown).
	Count int64
	// Lo and Hi are the order-statistic interval of the value at
	// Config.Confidence, for quantiles computed from points; both 0 when
	// unknown.
	Lo, Hi float64
	// Repeats is the number of runs of one commit pooled into this point
	// (0 or 1: one run): Value is their geometric mean, Lo and Hi the
	// interval of that mean from their own errors, and the point's
	// between-run variance is a run's divided by Repeats.
	Repeats int
}

// Config holds the method's parameters; zero fields take the defaults
// (DefaultConfig), which docs/changepoints.md explains.
type Config struct {
	// Window is the number of runs E-Divisive looks at at once; windows
	// start every Window/2 runs.
	Window int
	// PValue is the false discovery rate at which change points are
	// reported, controlled across the hypotheses of one test.
	PValue float64
	// WeakFactor multiplies PValue for the first, per-window pass.
	WeakFactor float64
	// MinRuns is the least number of runs (outliers not counted) on each
	// side of a change point: a change is reported once MinRuns runs
	// after it agree.
	MinRuns int
	// OutlierZ is how many standard deviations a run must lie from the
	// runs on both sides of it, in the same direction, to be an outlier.
	OutlierZ float64
	// Neighbours is how many runs on each side an outlier is judged
	// against.
	Neighbours int
	// Confidence is the level of the runs' Lo/Hi intervals.
	Confidence float64
}

// DefaultConfig is Otava's window and p-value with this package's
// minimum segment and outlier rule.
func DefaultConfig() Config {
	return Config{Window: 50, PValue: 0.0002, WeakFactor: 10, MinRuns: 3, OutlierZ: 4, Neighbours: 5, Confidence: figures.IntervalConfidence}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Window <= 0 {
		c.Window = d.Window
	}
	if c.PValue <= 0 {
		c.PValue = d.PValue
	}
	if c.WeakFactor <= 0 {
		c.WeakFactor = d.WeakFactor
	}
	if c.MinRuns <= 0 {
		c.MinRuns = d.MinRuns
	}
	if c.OutlierZ <= 0 {
		c.OutlierZ = d.OutlierZ
	}
	if c.Neighbours <= 0 {
		c.Neighbours = d.Neighbours
	}
	if c.Confidence <= 0 || c.Confidence >= 1 {
		c.Confidence = d.Confidence
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.MinRuns < 2:
		return fmt.Errorf("minimum of %d runs per segment: a segment's spread needs at least 2", c.MinRuns)
	case c.Window < 4*c.MinRuns:
		return fmt.Errorf("window %d is shorter than 4 × the minimum of %d runs per segment", c.Window, c.MinRuns)
	case c.PValue >= 1 || c.PValue*c.WeakFactor >= 1:
		return fmt.Errorf("p-value %v × weak factor %v must stay below 1", c.PValue, c.WeakFactor)
	case c.Neighbours < 2:
		return fmt.Errorf("neighbours %d: an outlier needs at least 2 runs on each side", c.Neighbours)
	}
	return nil
}

// RunRef places a run in the analysed line: Index is 1-based in commit
// order.
type RunRef struct {
	Index  int    `json:"index"`
	TestID string `json:"testid,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// Change is a change point: the run at which a series' level changed.
type Change struct {
	ID string `json:"id"`
	Key
	Run       RunRef    `json:"run"`
	Direction Direction `json:"direction"`
	// Before and After are the levels of the segments on each side
	// (geometric means for positive figures), in the figure's unit.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Delta is After − Before; Change is After/Before − 1, 0 when Before
	// is 0 (an error rate rising from none).
	Delta  float64 `json:"delta"`
	Change float64 `json:"change"`
	// P is the t-test's p-value of the two segments; Q the same adjusted
	// for the false discovery rate across the test's hypotheses. For a figure
	// of an endpoint's latency family, P is the figure's own test and Q
	// and JointP the family's, which decided the change.
	P      float64 `json:"p"`
	Q      float64 `json:"q"`
	JointP float64 `json:"joint_p,omitempty"`
}

// Outlier is a lone run far from the runs on both sides of it.
type Outlier struct {
	Key
	Run       RunRef    `json:"run"`
	Direction Direction `json:"direction"`
	Value     float64   `json:"value"`
	// SegmentMean is the level of the segment the run lies in, without it.
	SegmentMean float64 `json:"segment_mean"`
	// Change is Value/SegmentMean − 1 (0 when the level is 0); Sigmas
	// how many of the run's standard deviations (between-run and its own
	// sampling error) it lies from the segment, 0 when the series shows
	// no spread at all.
	Change float64 `json:"change"`
	Sigmas float64 `json:"sigmas"`
}

// ChangeID is a change point's stable id: the same test, figure,
// endpoint and commit always give the same id, so a stored status
// (acknowledged, expected…) finds its change again. A run without a
// commit is named by its test id, else by "#" and its index.
func ChangeID(k Key, commit string) string {
	h := sha256.Sum256([]byte(strings.Join([]string{k.Test, string(k.Figure), k.Endpoint, commit}, "\x00")))
	return hex.EncodeToString(h[:8])
}

// Result is the analysis of every series of one test.
type Result struct {
	// Series is the number of hypotheses the false discovery rate is
	// controlled over: every series outside a family once, each latency
	// family as its effective number of independent figures (Nyholt's),
	// the sum rounded up.
	Series   int
	Changes  []Change
	Outliers []Outlier
	// Suspected are the steps the analysis saw but did not decide, with
	// the runs that would decide them.
	Suspected []Suspect
	// NotAnalysed are the percentile series some of whose runs had too
	// few requests to estimate them: those runs were left out.
	NotAnalysed []NotAnalysed
}

// NotAnalysed is a percentile series with runs too small to estimate
// it (figures.Def.Supported), which the analysis left out.
type NotAnalysed struct {
	Key
	// Runs is the number of runs left out, Analysed the number kept.
	Runs     int `json:"runs"`
	Analysed int `json:"analysed"`
	// MostRequests is the largest request count of the runs left out;
	// RequestsNeeded what a run needs for the figure.
	MostRequests   int64 `json:"most_requests"`
	RequestsNeeded int64 `json:"requests_needed"`
}

// Analyzer holds the series of one test and their analysis state.
// Appending runs and reading the result are not safe for concurrent use.
type Analyzer struct {
	cfg    Config
	series map[Key]*series
	order  []Key
	// keys are every series appended to, in order, runs left out or not;
	// last the line index of each one's latest run; skipped the runs a
	// series left out for too few requests.
	keys    []Key
	last    map[Key]int
	skipped map[Key]*NotAnalysed
	// alone tests every series by itself, no family: the method the
	// families are measured against.
	alone bool
}

// ErrBadValue is wrapped by Append's errors for values it refuses.
var ErrBadValue = errors.New("bad value")

// New returns an Analyzer with cfg's parameters (zero fields default).
func New(cfg Config) (*Analyzer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Analyzer{cfg: cfg, series: map[Key]*series{}, last: map[Key]int{}, skipped: map[Key]*NotAnalysed{}}, nil
}

// Config is the analyzer's configuration, defaults filled in.
func (a *Analyzer) Config() Config { return a.cfg }

// Append adds the next run (in commit order) to series k, creating it
// with polarity pol on first use. A run with too few requests to
// estimate a percentile figure (figures.Def.Supported of its Count, when
// known) is left out of the series and counted in Result.NotAnalysed.
func (a *Analyzer) Append(k Key, pol figures.Polarity, r Run) error {
	if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) || r.Value < 0 {
		return fmt.Errorf("%s run %d (%s): value %v: %w, want a finite number ≥ 0", k, a.Len(k)+1, r.Commit, r.Value, ErrBadValue)
	}
	if r.Index < 0 || r.Index > 0 && r.Index <= a.last[k] {
		return fmt.Errorf("%s run %d (%s): index %d: %w, want indices rising in commit order", k, a.Len(k)+1, r.Commit, r.Index, ErrBadValue)
	}
	if r.Count < 0 {
		return fmt.Errorf("%s run %d (%s): count %d: %w, want ≥ 0", k, a.Len(k)+1, r.Commit, r.Count, ErrBadValue)
	}
	if r.Repeats < 0 {
		return fmt.Errorf("%s run %d (%s): %d repeats: %w, want ≥ 0", k, a.Len(k)+1, r.Commit, r.Repeats, ErrBadValue)
	}
	if r.Lo != 0 || r.Hi != 0 {
		if !(r.Lo >= 0 && r.Hi >= r.Lo) || math.IsInf(r.Hi, 0) {
			return fmt.Errorf("%s run %d (%s): interval [%v, %v]: %w, want 0 ≤ lo ≤ hi", k, a.Len(k)+1, r.Commit, r.Lo, r.Hi, ErrBadValue)
		}
	}
	s, ok := a.series[k]
	if ok && s.off > 0 && r.Value <= 0 && !s.linear {
		return fmt.Errorf("%s run %d (%s): a value of 0 turns the series to the linear scale, which re-derives runs before the checkpoint's tail: %w", k, a.Len(k)+1, r.Commit, ErrCheckpoint)
	}
	// Every run carries its place in the line, so that a series with runs
	// left out still places the rest.
	if r.Index == 0 {
		r.Index = a.last[k] + 1
	}
	if _, seen := a.last[k]; !seen {
		a.keys = append(a.keys, k)
	}
	a.last[k] = r.Index
	if d := k.Figure.Def(); r.Count > 0 && !d.Supported(r.Count) {
		na := a.skipped[k]
		if na == nil {
			na = &NotAnalysed{Key: k, RequestsNeeded: d.RequestsNeeded()}
			a.skipped[k] = na
		}
		na.Runs++
		na.MostRequests = max(na.MostRequests, r.Count)
		return nil
	}
	if !ok {
		s = newSeries(k, pol, a.cfg)
		a.series[k] = s
		a.order = append(a.order, k)
	}
	s.append(r)
	return nil
}

// Len is the number of runs of series k.
func (a *Analyzer) Len(k Key) int {
	if s, ok := a.series[k]; ok {
		return s.n()
	}
	return 0
}

// Keys are the series in the order they were first appended to, those
// whose every run was left out for too few requests included.
func (a *Analyzer) Keys() []Key { return slices.Clone(a.keys) }

// Result analyses every series (only the windows runs were appended to
// since the last call) and returns the change points whose false
// discovery rate across the test's hypotheses is at most Config.PValue,
// the outlier runs, the steps suspected but not decided, and the series
// with runs left out. An endpoint's latency figures are one hypothesis,
// tested on their joint series (family); every other series is one. The
// answer depends only on the runs, never on the order of calls.
func (a *Analyzer) Result() Result {
	units := a.units()
	// The family's size: a series counts once, a family of figures as
	// many independent tests as its figures' correlation makes them.
	var size float64
	for _, u := range units {
		size++
		if u.f != nil {
			size += u.f.meff - 1
		}
	}
	m := int(math.Ceil(size - 1e-9))
	res := Result{Series: m}
	type cand struct {
		u   int
		idx int
	}
	// Each hypothesis' own merge pass at PValue, then the family's.
	weak, byU := a.unitChangePoints(units)
	var ps []float64
	var qs []float64
	var cs []cand
	for {
		cs, ps = cs[:0], ps[:0]
		for i, u := range units {
			for _, cp := range byU[i] {
				cs = append(cs, cand{i, cp})
				ps = append(ps, u.pAt(byU[i], cp))
			}
		}
		qs = stats.BenjaminiHochberg(ps, m)
		worst := -1
		for i := range cs {
			if qs[i] > a.cfg.PValue && (worst < 0 || ps[i] > ps[worst]) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		// Drop the weakest failing point and test the rest again: its
		// neighbours' segments have grown.
		u := cs[worst].u
		byU[u] = slices.DeleteFunc(byU[u], func(x int) bool { return x == cs[worst].idx })
	}
	rank := map[Key]int{}
	for i, k := range a.order {
		rank[k] = i
	}
	for i, c := range cs {
		u := units[c.u]
		if u.f == nil {
			res.Changes = append(res.Changes, u.s.change(byU[c.u], c.idx, ps[i], qs[i]))
			continue
		}
		res.Changes = append(res.Changes, u.f.changes(byU[c.u], c.idx, ps[i], qs[i])...)
	}
	slices.SortStableFunc(res.Changes, func(x, y Change) int {
		if d := rank[x.Key] - rank[y.Key]; d != 0 {
			return d
		}
		return x.Run.Index - y.Run.Index
	})
	for i, u := range units {
		res.Suspected = append(res.Suspected, a.suspects(u, weak[i], byU[i], len(cs), m)...)
	}
	own := map[Key][]int{}
	for i, u := range units {
		if u.f == nil {
			own[u.s.key] = byU[i]
			continue
		}
		for _, s := range u.f.all {
			own[s.key] = u.f.mapped(s, byU[i])
		}
	}
	for _, k := range a.order {
		res.Outliers = append(res.Outliers, a.series[k].outliers(own[k])...)
	}
	for _, k := range a.keys {
		if na := a.skipped[k]; na != nil {
			v := *na
			v.Analysed = a.Len(k)
			res.NotAnalysed = append(res.NotAnalysed, v)
		}
	}
	slices.SortFunc(res.NotAnalysed, func(x, y NotAnalysed) int { return strings.Compare(x.String(), y.String()) })
	return res
}

// unit is one hypothesis of the test: a series alone (s), or an
// endpoint's latency family (f), whose change points are line indices.
type unit struct {
	s *series
	f *family
}

// changePoints are the unit's change points after its merge pass at the
// weak p-value (WeakFactor × PValue) and after the one at PValue, which
// continues from it: the merge drops the same points in the same order
// until the weak pass stops.
func (u unit) changePoints(cfg Config) (weak, cps []int) {
	pw := cfg.PValue * cfg.WeakFactor
	if u.f != nil {
		weak = u.f.merge(u.f.weakPoints(), pw, cfg.MinRuns)
		return weak, u.f.merge(weak, cfg.PValue, cfg.MinRuns)
	}
	weak = u.s.merge(u.s.weakPoints(), pw)
	return weak, u.s.merge(slices.Clone(weak), cfg.PValue)
}

func (u unit) pAt(cps []int, cp int) float64 {
	if u.f != nil {
		return u.f.pAt(cps, cp)
	}
	return u.s.pAt(cps, cp)
}

// units are the test's hypotheses: each family tested as one, in the
// order of its first figure, and every series outside a family.
func (a *Analyzer) units() []unit {
	for _, k := range a.order {
		a.series[k].refresh()
	}
	fams := a.families()
	var out []unit
	done := map[string]bool{}
	for _, k := range a.order {
		f, ok := fams[k.Endpoint]
		if !ok || !k.Figure.Def().Latency {
			out = append(out, unit{s: a.series[k]})
			continue
		}
		if !done[k.Endpoint] {
			done[k.Endpoint] = true
			out = append(out, unit{f: f})
		}
	}
	return out
}

// unitChangePoints runs each hypothesis' own analysis, spread over the
// machine's cores (each series' state is its own).
func (a *Analyzer) unitChangePoints(units []unit) (weak, byU [][]int) {
	weak, byU = make([][]int, len(units)), make([][]int, len(units))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(units)) {
		wg.Go(func() {
			for i := range next {
				weak[i], byU[i] = units[i].changePoints(a.cfg)
			}
		})
	}
	for i := range units {
		next <- i
	}
	close(next)
	wg.Wait()
	return weak, byU
}

// Analyze is the from-scratch analysis of complete series: the same
// answer as appending their runs one at a time.
func Analyze(cfg Config, series []Series) (Result, error) {
	a, err := New(cfg)
	if err != nil {
		return Result{}, err
	}
	for _, s := range series {
		if len(s.Runs) == 0 {
			continue
		}
		for _, r := range s.Runs {
			if err := a.Append(s.Key, s.Polarity, r); err != nil {
				return Result{}, err
			}
		}
	}
	return a.Result(), nil
}

// Series is one series' runs in commit order.
type Series struct {
	Key      Key
	Polarity figures.Polarity
	Runs     []Run
}

func direction(pol figures.Polarity, up bool) Direction {
	if up == (pol == figures.HigherIsWorse) {
		return Regression
	}
	return Improvement
}
