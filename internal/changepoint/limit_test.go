package changepoint

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/simulate"
	"github.com/envelope-dev/envelope/internal/simulate/simulatetest"
	"github.com/envelope-dev/envelope/internal/stats"
)

// The measurement of the method against the statistical limit. For one
// series, the best any method can do at a given false-change budget is
// the test that knows where the step is and the series' true spread: a
// one-sided z-test of the mean of the runs after the step against the
// mean of the runs before, at the per-series threshold the budget allows
// (the oracle). The measurement draws histories with the run simulator
// (runSimulator), steps the latency of one endpoint (or of every one) by
// +5, +10 and +20% from run 41 of 60, and reports, on the same histories,
// how often the oracle, this package's method and Otava's defaults find
// the step within 5, 10 and 20 runs after it, and the false change points
// of each where nothing changed.

// limitEnv enables the long measurements (TestLimitTable,
// TestPValueSweep); without it they are skipped.
const limitEnv = "ENVELOPE_LIMIT"

// limitModels are the noise models the measurements are made under:
// the clustered model (slow requests that come together within a run,
// as in real runs), which the guard uses, and the run-level variance
// alone (independent requests), beside it.
var limitModels = []struct {
	name string
	v    simulate.Variance
}{
	{"clustered", simulate.ClusteredVariance()},
	{"run-level", simulate.RealVariance()},
}

// limitStepAt is the first run at the new level (0-based): 40 runs before
// the step, 20 after it.
const limitStepAt = 40

// limitWithin are the delays (runs at the new level) detection is
// reported at.
var limitWithin = []int{5, 10, 20}

// limitTarget is one series of the measurement and the endpoint whose
// latency the step multiplies ("*": every endpoint).
type limitTarget struct {
	spread string
	key    Key
	move   string
}

// limitTargets cover the run-to-run spreads of the real runs' latency
// series (sd of the log value over the history fixture's clean runs
// 01–10: 0.023 for auth_register's median, the lowest, to 0.097 for
// auth_login's p95, the noisiest endpoint's highest that its runs
// estimate: its p99, 0.135, rests on fewer than 1,000 requests a run
// and is not analysed; actor_get's p99, 0.111, is the only one above).
func limitTargets() []limitTarget {
	return []limitTarget{
		{"low", hk("median", "auth_register"), "auth_register"},
		{"low", hk("p95", ""), "*"},
		{"middle", hk("p95", "actor_get"), "actor_get"},
		{"high", hk("p95", "auth_login"), "auth_login"},
	}
}

// limitCase is one step of one target.
type limitCase struct {
	target limitTarget
	factor float64
	sc     scenario
}

func newLimitCase(tg limitTarget, factor float64) limitCase {
	moved := either(endpointLatency(tg.move), aggregateLatency)
	if tg.move == "*" {
		moved = func(k Key) bool { return isLatency(k.Figure) }
	}
	sc := scenario{name: fmt.Sprintf("%s +%.0f%%", tg.key, 100*(factor-1)), outlier: -1,
		steps: func(*rand.Rand) []simulatetest.Step {
			return []simulatetest.Step{latencyStep(tg.move, limitStepAt, 0, factor)}
		},
		moves:  []move{{moved, limitStepAt, Regression}},
		truths: []truth{{tg.key, limitStepAt, Regression}}}
	return limitCase{target: tg, factor: factor, sc: sc}
}

func limitCases() []limitCase {
	var out []limitCase
	for _, f := range []float64{1.05, 1.10, 1.20} {
		for _, tg := range limitTargets() {
			out = append(out, newLimitCase(tg, f))
		}
	}
	return out
}

// limitBudgetQ is the false discovery rate across a test's series that
// keeps false change points within the budget of 1 per 1,000 runs
// (docs/changepoints.md, the PValue parameter). It is the oracle's
// budget whatever configuration is measured, so that a method is always
// held against the same limit.
const limitBudgetQ = 0.0002

// oracleThreshold is the z a lone change must pass at the budget: with
// Benjamini-Hochberg at limitBudgetQ across a test's series, one change
// alone needs p ≤ limitBudgetQ/series (0.0002/29 = 6.9·10⁻⁶: z = 4.35
// one-sided, for a test that knows the spread; the method's two-sided
// t-test with a spread estimated from 43 runs needs t = 5.1 for the
// same p).
func oracleThreshold(series int) float64 {
	return stats.NormalQuantile(1 - limitBudgetQ/float64(series))
}

// oracleZ is the oracle's statistic after k runs at the new level: the
// mean of ys[at:at+k] less the mean of ys[:at], in standard errors of a
// series of spread sigma, signed so that a regression is positive.
func oracleZ(ys []float64, at, k int, sigma float64, pol figures.Polarity) float64 {
	z := (stats.Mean(ys[at:at+k]) - stats.Mean(ys[:at])) / (sigma * math.Sqrt(1/float64(k)+1/float64(at)))
	if pol == figures.LowerIsWorse {
		z = -z
	}
	return z
}

// oracleClosed is the oracle's detection in closed form: a step of
// logStep in a series of spread sigma passes threshold z after k runs
// with probability Φ(logStep/(σ·√(1/k + 1/at)) − z).
func oracleClosed(logStep, sigma float64, at, k int, z float64) float64 {
	d := logStep/(sigma*math.Sqrt(1/float64(k)+1/float64(at))) - z
	return 0.5 * math.Erfc(-d/math.Sqrt2)
}

// logValues is a series' values in log, nil when one is not positive
// (a series the method analyses as is, which the oracle leaves out).
func logValues(s Series) []float64 {
	ys := make([]float64, len(s.Runs))
	for i, r := range s.Runs {
		if !(r.Value > 0) {
			return nil
		}
		ys[i] = math.Log(r.Value)
	}
	return ys
}

// limitMeasure is the measurement over a set of seeds.
type limitMeasure struct {
	cases  []limitCase
	series int     // series per history
	z      float64 // the oracle's threshold
	// sigma is each series' true spread: the pooled sd of its log value
	// within the histories without a change.
	sigma map[Key]float64
	// ours and otava per case, and where nothing changed.
	ours, otava         []*powerRow
	noneOurs, noneOtava *powerRow
	// targets are the cases' target series in log, history by history,
	// scored by the oracle once sigma is known; none the histories
	// without a change, every series.
	targets [][][]float64
	none    [][]Series
	// oracle[c][j] histories where the oracle found case c's step after
	// limitWithin[j] runs; oracleFalse series where it fired in a history
	// without a change at any of them.
	oracle      [][]int
	oracleFalse int
}

var noChange = scenario{name: "no change", outlier: -1}

// measureLimit draws (through draw) the histories of every case and of
// no change for each seed and measures the three methods on them.
func measureLimit(tb testing.TB, cfg Config, cases []limitCase, seeds []uint64, withOtava bool, draw func(sc scenario, seed uint64) []Series) *limitMeasure {
	tb.Helper()
	m := &limitMeasure{cases: cases, sigma: map[Key]float64{},
		noneOurs: newRow(noChange, "changepoint"), noneOtava: newRow(noChange, "Otava defaults"),
		targets: make([][][]float64, len(cases)), oracle: make([][]int, len(cases))}
	for _, c := range cases {
		m.ours = append(m.ours, newRow(c.sc, "changepoint"))
		m.otava = append(m.otava, newRow(c.sc, "Otava defaults"))
	}
	for _, seed := range seeds {
		h := draw(noChange, seed)
		m.series = len(h)
		measureOurs(tb, cfg, m.noneOurs, noChange, h)
		if withOtava {
			measureOtava(m.noneOtava, noChange, h)
		}
		m.none = append(m.none, h)
		for i, c := range cases {
			h := draw(c.sc, seed)
			measureOurs(tb, cfg, m.ours[i], c.sc, h)
			if withOtava {
				measureOtava(m.otava[i], c.sc, h)
			}
			for _, s := range h {
				if s.Key == c.target.key {
					m.targets[i] = append(m.targets[i], logValues(s))
				}
			}
		}
	}
	m.z = oracleThreshold(m.series)
	// The true spread: pooled within the histories without a change.
	ss, df := map[Key]float64{}, map[Key]int{}
	for _, h := range m.none {
		for _, s := range h {
			ys := logValues(s)
			if ys == nil {
				continue
			}
			mean := stats.Mean(ys)
			for _, y := range ys {
				ss[s.Key] += (y - mean) * (y - mean)
			}
			df[s.Key] += len(ys) - 1
		}
	}
	for k, v := range ss {
		m.sigma[k] = math.Sqrt(v / float64(df[k]))
	}
	for i, c := range cases {
		m.oracle[i] = make([]int, len(limitWithin))
		for _, ys := range m.targets[i] {
			for j, k := range limitWithin {
				if ys != nil && oracleZ(ys, limitStepAt, k, m.sigma[c.target.key], figures.HigherIsWorse) > m.z {
					m.oracle[i][j]++
				}
			}
		}
	}
	for _, h := range m.none {
		for _, s := range h {
			ys, sigma := logValues(s), m.sigma[s.Key]
			if ys == nil || !(sigma > 0) {
				continue
			}
			for _, k := range limitWithin {
				if oracleZ(ys, limitStepAt, k, sigma, s.Polarity) > m.z {
					m.oracleFalse++
					break
				}
			}
		}
	}
	return m
}

// within is how many histories of row had the first truth reported
// within k runs at the new level.
func within(r *powerRow, k int) int {
	n := 0
	for _, d := range r.delays[0] {
		if d <= k {
			n++
		}
	}
	return n
}

func perThousand(k, runs int) float64 { return 1000 * float64(k) / float64(runs) }

// table is the Markdown table of the measurement; real gives the real
// runs' spread of each target series.
func (m *limitMeasure) table(real map[Key]float64) string {
	var b strings.Builder
	n := len(m.none)
	fmt.Fprintf(&b, "Oracle: one-sided z-test at z = %.2f (p = %.2g per series: %g across %d series), true spread from the %d histories without a change.\n\n",
		m.z, limitBudgetQ/float64(m.series), limitBudgetQ, m.series, n)
	b.WriteString("| step | series | spread (real runs 01–10 / simulated) | method | within 5 runs | within 10 runs | within 20 runs | of the oracle's within 10 runs | false change points per 1,000 runs beside the step |\n")
	b.WriteString("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for i, c := range m.cases {
		k := c.target.key
		head := fmt.Sprintf("| +%.0f%% | %s | %s: %.3f / %.3f |", 100*(c.factor-1), k, c.target.spread, real[k], m.sigma[k])
		var cells []string
		for j, w := range limitWithin {
			cells = append(cells, fmt.Sprintf("%s; closed form %.1f%%", pct(m.oracle[i][j], n), 100*oracleClosed(math.Log(c.factor), m.sigma[k], limitStepAt, w, m.z)))
		}
		fmt.Fprintf(&b, "%s oracle | %s | – | – |\n", head, strings.Join(cells, " | "))
		o10 := m.oracle[i][1]
		for _, r := range []*powerRow{m.ours[i], m.otava[i]} {
			if r.histories == 0 {
				continue
			}
			cells = cells[:0]
			for _, w := range limitWithin {
				cells = append(cells, pct(within(r, w), r.histories))
			}
			frac := "–"
			if o10 > 0 {
				frac = fmt.Sprintf("%.0f%%", 100*float64(within(r, 10))/float64(o10))
			}
			fmt.Fprintf(&b, "%s %s | %s | %s | %.2f |\n", head, r.method, strings.Join(cells, " | "), frac, perThousand(r.falseCPs, r.runs))
		}
	}
	fmt.Fprintf(&b, "\nNo change (%d histories, %d runs, %d series):\n\n", n, n*powerRuns, m.series)
	b.WriteString("| method | false change points per 1,000 runs (count) |\n| --- | ---: |\n")
	fmt.Fprintf(&b, "| oracle (after 5, 10 and 20 runs from run 41, every series) | %.2f (%d) |\n", perThousand(m.oracleFalse, n*powerRuns), m.oracleFalse)
	for _, r := range []*powerRow{m.noneOurs, m.noneOtava} {
		if r.histories > 0 {
			fmt.Fprintf(&b, "| %s | %.2f (%d) |\n", r.method, perThousand(r.falseCPs, r.runs), r.falseCPs)
		}
	}
	return b.String()
}

// realSpreads is the sd of each series' log value over the history
// fixture's clean runs 01–10 (one setting, no change).
func realSpreads(tb testing.TB) map[Key]float64 {
	runs, _ := loadHistory(tb)
	out := map[Key]float64{}
	for _, s := range historySeries(runs[:10]) {
		if ys := logValues(s); ys != nil {
			out[s.Key] = stats.StdDev(ys)
		}
	}
	return out
}

// TestLimitTable is the measurement behind the oracle table of
// docs/changepoints.md: seeds 1–200, every case, the three methods, and
// the run-to-run spread of every series, real and simulated, under each
// noise model.
//
//	ENVELOPE_LIMIT=1 go test ./internal/changepoint/ -run '^TestLimitTable$' -v -timeout 60m
func TestLimitTable(t *testing.T) {
	if os.Getenv(limitEnv) == "" {
		t.Skipf("the long measurement: set %s=1", limitEnv)
	}
	real := realSpreads(t)
	for _, model := range limitModels {
		t.Run(model.name, func(t *testing.T) {
			g := newRunSimulator(t).withVariance(model.v)
			m := measureLimit(t, powerConfig, limitCases(), seedsFrom(1, 200), true, func(sc scenario, seed uint64) []Series {
				return g.History(t, sc, powerRuns, seed)
			})
			t.Logf("\n%s", m.table(real))
			var b strings.Builder
			b.WriteString("| series | real runs 01–10 | simulated |\n| :-- | --: | --: |\n")
			for _, s := range m.none[0] {
				if _, ok := m.sigma[s.Key]; ok {
					fmt.Fprintf(&b, "| %s | %.3f | %.3f |\n", s.Key, real[s.Key], m.sigma[s.Key])
				}
			}
			t.Logf("run-to-run spread (sd of the log value):\n%s", b.String())
		})
	}
}

// The CI guard against the limit: seeds 1–20 of the middle-spread
// series' +20% step (actor_get's p95) and of no change under the
// clustered model, this package's method and the oracle.
const guardHistories = 20

var (
	guardOnce sync.Once
	guardRuns map[string][]Series
)

// guardDraw draws the guard's histories once per test binary, so that
// the guard and its broken variants judge the same runs.
func guardDraw(tb testing.TB) func(sc scenario, seed uint64) []Series {
	g := newRunSimulator(tb).withVariance(limitModels[0].v)
	guardOnce.Do(func() {
		guardRuns = map[string][]Series{}
		for _, seed := range seedsFrom(1, guardHistories) {
			for _, sc := range []scenario{noChange, guardCase().sc} {
				guardRuns[fmt.Sprint(sc.name, seed)] = g.History(tb, sc, powerRuns, seed)
			}
		}
	})
	return func(sc scenario, seed uint64) []Series { return guardRuns[fmt.Sprint(sc.name, seed)] }
}

func guardCase() limitCase { return newLimitCase(limitTargets()[2], 1.20) }

// guardFraction is the least share of the oracle's detections within 10
// runs the method must keep on the guard's step. On seeds 1–200 under
// the clustered model it finds the step in 189 histories against the
// oracle's 151 (docs/changepoints.md), more than the oracle, which tests
// the one series, as it tests the endpoint's figures together: the share
// is taken as all of the oracle's, at its Wilson 99% lower bound.
var guardFraction = wilsonLower(151, 151, 2.326)

// limitGuard is what the guard checks of cfg's method: its detections
// within 10 runs no fewer than the 1% quantile of a binomial over the
// oracle's detections at guardFraction, and its false change points
// where nothing changed no more than 20 histories of 60 runs pass with
// under 1% probability at 1 per 1,000 runs. It returns each failure.
func limitGuard(tb testing.TB, cfg Config) (failures []string, m *limitMeasure) {
	tb.Helper()
	m = measureLimit(tb, cfg, []limitCase{guardCase()}, seedsFrom(1, guardHistories), false, guardDraw(tb))
	oracle10, ours10 := m.oracle[0][1], within(m.ours[0], 10)
	if floor := binomialFloor(oracle10, guardFraction, 0.01); ours10 < floor {
		failures = append(failures, fmt.Sprintf("%s: found within 10 runs in %d of %d histories, floor %d (%.0f%% of the oracle's %d)", m.cases[0].sc.name, ours10, guardHistories, floor, 100*guardFraction, oracle10))
	}
	runs := m.noneOurs.runs
	if ceiling := binomialCeiling(runs*m.series, 1/(1000*float64(m.series)), 0.01); m.noneOurs.falseCPs > ceiling {
		failures = append(failures, fmt.Sprintf("no change: %d false change points in %d runs, ceiling %d (1 per 1,000 runs)", m.noneOurs.falseCPs, runs, ceiling))
	}
	return failures, m
}

// TestLimitGuard keeps the method near the limit: on the guard's
// histories it finds the middle-spread +20% step within 10 runs about as
// often as the oracle, and keeps false change points under the budget.
func TestLimitGuard(t *testing.T) {
	failures, m := limitGuard(t, powerConfig)
	t.Logf("\n%s", m.table(realSpreads(t)))
	for _, f := range failures {
		t.Error(f)
	}
}

// The guard fails a method that is broken on purpose: one that needs
// 15 runs after a change, and one whose p-value (0.05) lets false change
// points through. (A stricter p-value alone no longer breaks it: an
// endpoint's figures tested together pass a threshold of p 10⁻³⁰ on a
// +20% step.)
func TestLimitGuardCanFail(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"15 runs after a change", Config{MinRuns: 15, Window: 60}},
		{"p-value 0.05", Config{PValue: 0.05}},
	} {
		failures, _ := limitGuard(t, tc.cfg)
		if len(failures) == 0 {
			t.Errorf("%s: the guard passed a broken method", tc.name)
		}
		t.Logf("%s: %s", tc.name, strings.Join(failures, "; "))
	}
}

// TestPValueSweep is the measurement behind the choice of PValue in
// docs/changepoints.md, under each noise model: seeds 1–200 of no
// change, actor_get +10% and the drift, each history analysed at each
// p-value.
//
//	ENVELOPE_LIMIT=1 go test ./internal/changepoint/ -run '^TestPValueSweep$' -v -timeout 60m
func TestPValueSweep(t *testing.T) {
	if os.Getenv(limitEnv) == "" {
		t.Skipf("the long measurement: set %s=1", limitEnv)
	}
	var scs []scenario
	for _, sc := range powerScenarios() {
		for _, name := range []string{"no change", "actor_get +10%", "drift"} {
			if strings.HasPrefix(sc.name, name) {
				scs = append(scs, sc)
			}
		}
	}
	ps := []float64{0.001, 0.0003, 0.0002, 0.0001}
	for _, model := range limitModels {
		t.Run(model.name, func(t *testing.T) {
			g := newRunSimulator(t).withVariance(model.v)
			rows := make([][]*powerRow, len(ps))
			for i := range ps {
				for _, sc := range scs {
					rows[i] = append(rows[i], newRow(sc, "changepoint"))
				}
			}
			for _, seed := range seedsFrom(1, 200) {
				for j, sc := range scs {
					h := g.History(t, sc, powerRuns, seed)
					for i, p := range ps {
						measureOurs(t, Config{PValue: p}, rows[i][j], sc, h)
					}
				}
			}
			t.Logf("\n%s", sweepTable(ps, rows))
		})
	}
}

// sweepTable is the Markdown table of the p-value sweep: rows[i] are
// the no-change, actor_get +10% and drift rows at ps[i].
func sweepTable(ps []float64, rows [][]*powerRow) string {
	var b strings.Builder
	b.WriteString("| PValue | false change points per 1,000 runs: no change | beside the drift | actor_get +10%: p95 within 5 runs | median within 5 runs | p95 by run 60 | median by run 60 |\n")
	b.WriteString("| --: | --: | --: | --: | --: | --: | --: |\n")
	for i, p := range ps {
		none, step, drift := rows[i][0], rows[i][1], rows[i][2]
		fmt.Fprintf(&b, "| %g | %.2f (%d) | %.2f (%d) | %s | %s | %s | %s |\n", p,
			perThousand(none.falseCPs, none.runs), none.falseCPs, perThousand(drift.falseCPs, drift.runs), drift.falseCPs,
			pct(step.within5[0], step.histories), pct(step.within5[1], step.histories), pct(step.detected[0], step.histories), pct(step.detected[1], step.histories))
	}
	return b.String()
}

// binomialCeiling is the smallest c with P(X > c) < alpha, X ~ Bin(n, p).
func binomialCeiling(n int, p, alpha float64) int {
	cdf := 0.0
	for c := 0; c <= n; c++ {
		cdf += math.Exp(lgammaf(n+1) - lgammaf(c+1) - lgammaf(n-c+1) + float64(c)*math.Log(p) + float64(n-c)*math.Log1p(-p))
		if 1-cdf < alpha {
			return c
		}
	}
	return n
}
