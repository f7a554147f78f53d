package changepoint

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/simulate"
	"github.com/envelope-dev/envelope/internal/simulate/simulatetest"
	"github.com/envelope-dev/envelope/internal/stats"
)

// scenario is one simulated history: its changes and what must be found.
type scenario struct {
	name string
	// steps are the scenario's changes in the simulator's terms; rng is
	// the history's own stream (a bimodal endpoint's coin per run).
	steps func(rng *rand.Rand) []simulatetest.Step
	// truths are the changes to find: the series, the first run at the
	// new level (0-based), the direction.
	truths []truth
	// outlier is the lone outlier run (0-based), -1 for none.
	outlier int
	// drift: the series whose drift since driftFrom must pass the
	// tolerance.
	drift     *Key
	driftFrom int
	// moves are every change the scenario makes: a change point matching
	// one (series, run at or within the minimum segment after, direction)
	// is true, any other is false.
	moves []move
	// ignore: series whose change points are neither true nor false (a
	// drifting series, where any level is right for a while).
	ignore func(k Key) bool
}

// latencyStep multiplies endpoint ep's latency by f from run at on (to
// run until, 0 for good).
func latencyStep(ep string, at, until int, f float64) simulatetest.Step {
	return simulatetest.Step{At: at, Until: until, LatencyFactor: map[string]float64{ep: f}}
}

type move struct {
	sel func(Key) bool
	at  int
	dir Direction
}

type truth struct {
	key Key
	at  int
	dir Direction
}

const (
	powerRuns      = 60 // runs per simulated history
	powerTolerance = 0.10
)

func isLatency(f figures.Name) bool { return f.Def().Latency }

func endpointLatency(ep string) func(Key) bool {
	return func(k Key) bool { return k.Endpoint == ep && isLatency(k.Figure) }
}

func aggregateLatency(k Key) bool { return k.Endpoint == "" && isLatency(k.Figure) }

func either(a, b func(Key) bool) func(Key) bool { return func(k Key) bool { return a(k) || b(k) } }

func hk(figure figures.Name, ep string) Key { return Key{"history-shared", figure, ep} }

func powerScenarios() []scenario {
	actor := endpointLatency("actor_get")
	// An endpoint's latency moves its own latency figures and the
	// aggregate's.
	moved := func(ep string) func(Key) bool { return either(endpointLatency(ep), aggregateLatency) }
	stepAt := func(name string, ep string, factor float64) scenario {
		return scenario{name: name, outlier: -1,
			steps:  func(*rand.Rand) []simulatetest.Step { return []simulatetest.Step{latencyStep(ep, 40, 0, factor)} },
			moves:  []move{{moved(ep), 40, Regression}},
			truths: []truth{{hk("p95", ep), 40, Regression}, {hk("median", ep), 40, Regression}}}
	}
	rates := func(k Key) bool { return k.Figure.Def().Polarity == figures.LowerIsWorse }
	driftKey := hk("median", "actor_get")
	return []scenario{
		{name: "no change", outlier: -1},
		stepAt("actor_get +5% from run 41", "actor_get", 1.05),
		stepAt("actor_get +10% from run 41", "actor_get", 1.10),
		stepAt("actor_get +20% from run 41", "actor_get", 1.20),
		stepAt("auth_login +20% from run 41 (about 340 requests/run)", "auth_login", 1.20),
		{name: "throughput −3% from run 41", outlier: -1,
			steps:  func(*rand.Rand) []simulatetest.Step { return []simulatetest.Step{{At: 40, ThroughputFactor: 0.97}} },
			moves:  []move{{rates, 40, Regression}},
			truths: []truth{{hk("rps", ""), 40, Regression}, {hk("iterations_per_s", ""), 40, Regression}}},
		{name: "one outlier run (run 41: actor_get ×1.6)", outlier: 40,
			steps: func(*rand.Rand) []simulatetest.Step {
				return []simulatetest.Step{latencyStep("actor_get", 40, 41, 1.6)}
			}},
		{name: "two steps 5 runs apart (actor_get +20% from runs 36 and 41)", outlier: -1,
			steps: func(*rand.Rand) []simulatetest.Step {
				return []simulatetest.Step{latencyStep("actor_get", 35, 0, 1.2), latencyStep("actor_get", 40, 0, 1.2)}
			},
			moves: []move{{moved("actor_get"), 35, Regression}, {moved("actor_get"), 40, Regression}},
			truths: []truth{{hk("p95", "actor_get"), 35, Regression}, {hk("median", "actor_get"), 35, Regression},
				{hk("p95", "actor_get"), 40, Regression}, {hk("median", "actor_get"), 40, Regression}}},
		{name: "drift +1%/run from run 31 (actor_get)", outlier: -1, drift: &driftKey, driftFrom: 30, ignore: either(actor, aggregateLatency),
			steps: func(*rand.Rand) []simulatetest.Step {
				var st []simulatetest.Step
				for i := 30; i < powerRuns; i++ {
					st = append(st, latencyStep("actor_get", i, 0, 1.01))
				}
				return st
			}},
		{name: "bimodal endpoint (auth_login ×1.15 on half the runs)", outlier: -1,
			steps: func(rng *rand.Rand) []simulatetest.Step {
				var st []simulatetest.Step
				for i := range powerRuns {
					if rng.Float64() < 0.5 {
						st = append(st, latencyStep("auth_login", i, i+1, 1.15))
					}
				}
				return st
			}},
	}
}

// powerRow is one scenario's measurement by one method.
type powerRow struct {
	scenario, method string
	histories, runs  int
	// per truth (in the scenario's order)
	detected, within5 []int
	delays            [][]int
	falseCPs          int
	misplaced         int // in a moved series, its direction, up to 5 runs off
	outlierAsChange   int // histories with a change point next to the outlier run
	outlierFound      int // histories where the outlier run was reported as one
	driftFlagged      int
	driftDelays       []int
}

func newRow(sc scenario, method string) *powerRow {
	n := len(sc.truths)
	return &powerRow{scenario: sc.name, method: method, detected: make([]int, n), within5: make([]int, n), delays: make([][]int, n)}
}

// cpInfo is one change point as the scoring sees it.
type cpInfo struct {
	key   Key
	index int // 0-based
	dir   Direction
}

// score counts one history's final change points against the truths.
func (r *powerRow) score(sc scenario, cps []cpInfo) {
	nearOutlier := false
	for _, c := range cps {
		if sc.outlier >= 0 && c.index >= sc.outlier-3 && c.index <= sc.outlier+3 {
			nearOutlier = true
		}
		if sc.ignore != nil && sc.ignore(c.key) {
			continue
		}
		hit, near := false, false
		for _, m := range sc.moves {
			if m.sel(c.key) && matches(c, truth{c.key, m.at, m.dir}) {
				hit = true
			}
			if m.sel(c.key) && c.dir == m.dir && c.index >= m.at-5 && c.index <= m.at+5 {
				near = true
			}
		}
		switch {
		case hit:
		case near:
			r.misplaced++
		default:
			r.falseCPs++
		}
	}
	if nearOutlier {
		r.outlierAsChange++
	}
}

func matches(c cpInfo, tr truth) bool {
	return c.key == tr.key && c.index >= tr.at && c.index < tr.at+DefaultConfig().MinRuns && c.dir == tr.dir
}

// measurePower simulates every scenario for every seed and analyses each
// history with this package's method and with Otava's defaults.
func measurePower(tb testing.TB, g *runSimulator, scs []scenario, seeds []uint64, withOtava bool) []*powerRow {
	tb.Helper()
	ours, otava := make([]*powerRow, len(scs)), make([]*powerRow, len(scs))
	for i, sc := range scs {
		ours[i], otava[i] = newRow(sc, "changepoint"), newRow(sc, "Otava defaults")
	}
	// Seed by seed, so that the scenarios of one seed share their runs
	// before the first change.
	for _, seed := range seeds {
		for i, sc := range scs {
			h := g.History(tb, sc, powerRuns, seed)
			measureOurs(tb, powerConfig, ours[i], sc, h)
			if withOtava {
				measureOtava(otava[i], sc, h)
			}
		}
	}
	var rows []*powerRow
	for i := range scs {
		rows = append(rows, ours[i])
		if withOtava {
			rows = append(rows, otava[i])
		}
	}
	return rows
}

func firstTruth(sc scenario) int {
	first := powerRuns
	for _, tr := range sc.truths {
		first = min(first, tr.at)
	}
	if sc.drift != nil {
		first = min(first, sc.driftFrom+3)
	}
	return first
}

// powerConfig is the configuration measured (the defaults).
var powerConfig = Config{}

// measureOurs analyses history h with cfg as `history record` does, the
// runs so far after every run from the scenario's first change on, and
// records what it found into row.
func measureOurs(tb testing.TB, cfg Config, row *powerRow, sc scenario, h []Series) {
	a, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	delay := make([]int, len(sc.truths))
	driftDelay := -1
	var res Result
	for n := 1; n <= powerRuns; n++ {
		for _, s := range h {
			if err := a.Append(s.Key, s.Polarity, s.Runs[n-1]); err != nil {
				tb.Fatal(err)
			}
		}
		if n <= firstTruth(sc) && n < powerRuns {
			continue
		}
		res = a.Result()
		for t, tr := range sc.truths {
			if delay[t] > 0 || n <= tr.at {
				continue
			}
			for _, c := range res.Changes {
				if matches(cpInfo{c.Key, c.Run.Index - 1, c.Direction}, tr) {
					delay[t] = n - tr.at
					break
				}
			}
		}
		if sc.drift != nil && driftDelay < 0 && n >= sc.driftFrom+3 {
			if d, err := a.Drift(*sc.drift, sc.driftFrom+1, powerTolerance); err == nil && d.OverTolerance && d.Direction == Regression {
				driftDelay = n - sc.driftFrom
			}
		}
	}
	var cps []cpInfo
	for _, c := range res.Changes {
		cps = append(cps, cpInfo{c.Key, c.Run.Index - 1, c.Direction})
	}
	row.record(sc, cps, delay)
	for _, o := range res.Outliers {
		if o.Run.Index-1 == sc.outlier && o.Endpoint == "actor_get" && (o.Figure == "median" || o.Figure == "p95") {
			row.outlierFound++
			break
		}
	}
	if driftDelay > 0 {
		row.driftFlagged++
		row.driftDelays = append(row.driftDelays, driftDelay)
	}
}

func (r *powerRow) record(sc scenario, cps []cpInfo, delay []int) {
	r.histories++
	r.runs += powerRuns
	r.score(sc, cps)
	for t := range sc.truths {
		found := false
		for _, c := range cps {
			if matches(c, sc.truths[t]) {
				found = true
			}
		}
		if found {
			r.detected[t]++
		}
		if delay[t] > 0 {
			r.delays[t] = append(r.delays[t], delay[t])
			if delay[t] <= 5 {
				r.within5[t]++
			}
		}
	}
}

func otavaInfo(s Series, n int) []cpInfo {
	x := make([]float64, n)
	for i := range x {
		x[i] = s.Runs[i].Value
	}
	cps := otavaChanges(x, 50, 0.001)
	out := make([]cpInfo, len(cps))
	for j, c := range cps {
		a, b := 0, n
		if j > 0 {
			a = cps[j-1]
		}
		if j+1 < len(cps) {
			b = cps[j+1]
		}
		out[j] = cpInfo{s.Key, c, direction(s.Polarity, stats.Mean(x[c:b]) > stats.Mean(x[a:c]))}
	}
	return out
}

func measureOtava(row *powerRow, sc scenario, h []Series) {
	byKey := map[Key]Series{}
	for _, s := range h {
		byKey[s.Key] = s
	}
	delay := make([]int, len(sc.truths))
	for t, tr := range sc.truths {
		// Otava judges each series alone: the target series' prefixes.
		for n := tr.at + 1; n <= powerRuns && delay[t] == 0; n++ {
			for _, c := range otavaInfo(byKey[tr.key], n) {
				if matches(c, tr) {
					delay[t] = n - tr.at
				}
			}
		}
	}
	var cps []cpInfo
	for _, s := range h {
		cps = append(cps, otavaInfo(s, powerRuns)...)
	}
	row.record(sc, cps, delay)
}

func medianInt(xs []int) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return median(f)
}

// powerTable is the Markdown table of the rows.
func powerTable(rows []*powerRow, scs []scenario) string {
	var b strings.Builder
	b.WriteString("| scenario | method | series | detected | within 5 runs | median delay (runs) | 95% found within (runs) | false change points per 1,000 runs | misplaced per 1,000 runs | notes |\n")
	b.WriteString("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	byName := map[string]scenario{}
	for _, sc := range scs {
		byName[sc.name] = sc
	}
	for _, r := range rows {
		sc := byName[r.scenario]
		fp := 1000 * float64(r.falseCPs) / float64(r.runs)
		mis := 1000 * float64(r.misplaced) / float64(r.runs)
		var notes []string
		if sc.outlier >= 0 {
			notes = append(notes, fmt.Sprintf("a change point next to the outlier in %d/%d", r.outlierAsChange, r.histories))
			if r.method == "changepoint" {
				notes = append(notes, fmt.Sprintf("outlier reported in %d/%d", r.outlierFound, r.histories))
			}
		}
		if sc.drift != nil && r.method == "changepoint" {
			notes = append(notes, fmt.Sprintf("drift over the %.0f%% tolerance flagged in %d/%d, median %.0f runs after it began", 100*powerTolerance, r.driftFlagged, r.histories, medianInt(r.driftDelays)))
		}
		if len(sc.truths) == 0 {
			fmt.Fprintf(&b, "| %s | %s | – | – | – | – | – | %.2f | %.2f | %s |\n", r.scenario, r.method, fp, mis, strings.Join(notes, "; "))
			continue
		}
		for t, tr := range sc.truths {
			series := fmt.Sprintf("%s (run %d)", tr.key, tr.at+1)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.0f | %s | %.2f | %.2f | %s |\n", r.scenario, r.method, series,
				pct(r.detected[t], r.histories), pct(r.within5[t], r.histories), medianInt(r.delays[t]), delay95(r.delays[t], r.histories, powerRuns-tr.at), fp, mis, strings.Join(notes, "; "))
		}
	}
	return b.String()
}

// delay95 is the number of runs at the new level by which 95% of the
// histories had the change reported, "> max" when fewer did by the end.
func delay95(delays []int, histories, most int) string {
	need := int(math.Ceil(0.95 * float64(histories)))
	if len(delays) < need {
		return fmt.Sprintf("> %d", most)
	}
	d := slices.Clone(delays)
	slices.Sort(d)
	return fmt.Sprint(d[need-1])
}

func pct(k, n int) string { return fmt.Sprintf("%.1f%% (%d/%d)", 100*float64(k)/float64(n), k, n) }

func seedsFrom(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// BenchmarkPowerTable is the full measurement behind the power table in
// docs/changepoints.md: 200 simulated histories of 60 runs per
// scenario, seeds 1–200.
//
//	go test ./internal/changepoint/ -run '^$' -bench PowerTable -benchtime 1x -v
func BenchmarkPowerTable(b *testing.B) {
	runs, _ := loadHistory(b)
	g := newRunSimulator(b)
	scs := powerScenarios()
	for b.Loop() {
		rows := measurePower(b, g, scs, seedsFrom(1, 200), true)
		b.Logf("\n%s", powerTable(rows, scs))
		// Otava's defaults on the 30 real runs, for comparison with
		// TestHistoryFixture.
		for _, s := range historySeries(runs) {
			for _, c := range otavaInfo(s, len(s.Runs)) {
				b.Logf("Otava on the real runs: %s at run %d, %s", c.key, c.index+1, c.dir)
			}
		}
	}
}

// BenchmarkClusteredPower is the power table under the clustered noise
// model (simulate.ClusteredVariance: slow requests that come together
// within a run), seeds 1–200, beside BenchmarkPowerTable's run-level
// model.
//
//	go test ./internal/changepoint/ -run '^$' -bench ClusteredPower -benchtime 1x -v
func BenchmarkClusteredPower(b *testing.B) {
	g := newRunSimulator(b).withVariance(simulate.ClusteredVariance())
	scs := powerScenarios()
	for b.Loop() {
		rows := measurePower(b, g, scs, seedsFrom(1, 200), true)
		b.Logf("\n%s", powerTable(rows, scs))
	}
}

// TestPowerFloors is what CI guards of the power table: seeds 1–20 of
// every scenario, this package's method only. Each floor is the 1%
// quantile of a binomial over 20 histories at the Wilson 99% lower
// bound of the rate measured on seeds 1–200 (docs/changepoints.md), so
// it sits below the measurement by the slack 20 histories need; each
// ceiling on false change points is the count 20 histories of 60 runs
// exceed with probability under 1% at the goal of 1 per 1,000 runs.
func TestPowerFloors(t *testing.T) {
	g := newRunSimulator(t)
	scs := powerScenarios()
	const histories = 20
	// Seeds 1001–1020: disjoint from seeds 1–200, on which the floors
	// below were measured and PValue chosen (a history's runs are drawn
	// from seed×1000, so no run is shared either).
	rows := measurePower(t, g, scs, seedsFrom(1001, histories), false)
	t.Logf("\n%s", powerTable(rows, scs))
	row := func(name string) *powerRow {
		for _, r := range rows {
			if strings.HasPrefix(r.scenario, name) {
				return r
			}
		}
		t.Fatalf("no scenario %q", name)
		return nil
	}
	// Measured on seeds 1–200 (k of 200).
	floors := []struct {
		scenario string
		truth    int // index in the scenario's truths, -1: drift, -2: outlier reported
		measured int
	}{
		{"actor_get +10%", 0, 163},  // p95 detected
		{"actor_get +10%", 1, 163},  // median detected
		{"actor_get +20%", 0, 194},  // p95 detected
		{"actor_get +20%", 1, 194},  // median detected
		{"auth_login +20%", 1, 184}, // median detected
		{"throughput −3%", 0, 115},  // rps detected
		{"two steps", 1, 187},       // median, first step
		{"two steps", 3, 192},       // median, second step
		{"one outlier run", -2, 200},
		{"drift", -1, 200},
	}
	for _, f := range floors {
		r := row(f.scenario)
		got := 0
		switch f.truth {
		case -1:
			got = r.driftFlagged
		case -2:
			got = r.outlierFound
		default:
			got = r.detected[f.truth]
		}
		floor := binomialFloor(histories, wilsonLower(f.measured, 200, 2.326), 0.01)
		if got < floor {
			t.Errorf("%s (%d): %d of %d histories, floor %d (measured %d of 200)", r.scenario, f.truth, got, histories, floor, f.measured)
		}
	}
	// The goal holds where nothing changed: no change, one outlier run, a
	// bimodal endpoint (and the drift, which moves no other series).
	ceiling := poissonCeiling(float64(histories*powerRuns)/1000, 0.01)
	for i, r := range rows {
		if len(scs[i].moves) > 0 {
			continue
		}
		if r.falseCPs > ceiling {
			t.Errorf("%s: %d false change points in %d runs, ceiling %d (1 per 1,000 runs)", r.scenario, r.falseCPs, r.runs, ceiling)
		}
	}
	// The one-off outlier became a change point in 0 of 200 measured
	// histories: its ceiling is the 1% binomial tail at that rate's
	// Wilson 99% upper bound.
	if r, c := row("one outlier run"), binomialCeiling(histories, wilsonUpper(0, 200, 2.326), 0.01); r.outlierAsChange > c {
		t.Errorf("the one-off outlier became a change point in %d of %d histories, ceiling %d (0 of 200 measured)", r.outlierAsChange, r.histories, c)
	}
}

// wilsonLower is the Wilson score lower bound of a rate k/n at z.
func wilsonLower(k, n int, z float64) float64 {
	p, nf := float64(k)/float64(n), float64(n)
	c := p + z*z/(2*nf)
	d := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return (c - d) / (1 + z*z/nf)
}

// wilsonUpper is the Wilson score upper bound of a rate k/n at z.
func wilsonUpper(k, n int, z float64) float64 {
	p, nf := float64(k)/float64(n), float64(n)
	c := p + z*z/(2*nf)
	d := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return (c + d) / (1 + z*z/nf)
}

// binomialFloor is the largest k with P(X < k) ≤ alpha, X ~ Bin(n, p).
func binomialFloor(n int, p, alpha float64) int {
	cdf := 0.0
	for k := 0; k <= n; k++ {
		pk := math.Exp(lgammaf(n+1) - lgammaf(k+1) - lgammaf(n-k+1) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
		if cdf+pk > alpha {
			return k
		}
		cdf += pk
	}
	return n
}

// poissonCeiling is the smallest c with P(X > c) < alpha, X ~ Poisson(mean).
func poissonCeiling(mean, alpha float64) int {
	cdf, pk := 0.0, math.Exp(-mean)
	for c := 0; ; c++ {
		cdf += pk
		if 1-cdf < alpha {
			return c
		}
		pk *= mean / float64(c+1)
	}
}

func lgammaf(n int) float64 {
	v, _ := math.Lgamma(float64(n))
	return v
}

// BenchmarkPowerLongRuns is the +10% step of actor_get with 6-minute
// runs instead of the fixture's 45 s (8 times the requests, so a p95's
// sampling error a third as large), seeds 1–200: how much of the
// detection goal run length buys, with the run-level variance unchanged.
//
//	go test ./internal/changepoint/ -run '^$' -bench PowerLongRuns -benchtime 1x -v
func BenchmarkPowerLongRuns(b *testing.B) {
	g := newRunSimulator(b)
	long := &runSimulator{model: g.model, test: g.test, dur: 6 * time.Minute, variance: g.variance, cache: map[string]map[Key]Run{}}
	var scs []scenario
	for _, sc := range powerScenarios() {
		if strings.HasPrefix(sc.name, "no change") || strings.HasPrefix(sc.name, "actor_get +10%") {
			sc.name += ", 6-minute runs"
			scs = append(scs, sc)
		}
	}
	for b.Loop() {
		rows := measurePower(b, long, scs, seedsFrom(1, 200), false)
		b.Logf("\n%s", powerTable(rows, scs))
	}
}
