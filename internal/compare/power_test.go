package compare

import (
	"bytes"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/simulate"
	"github.com/envelope-dev/envelope/internal/stats/statstest"
)

// The power of compare, measured: baselines of simulated k6 runs of the
// demo envelope's workload (6-minute runs, four endpoints) drawn with the
// run-level variance of real runs (simulate.RealVariance: each run's
// aggregate latency level, each endpoint's own level), an envelope
// computed from them as `envelope baseline` does, and candidates of 1
// and 3 runs per scenario, over many seeds.

// powerScenario is one injected change and what must catch it.
type powerScenario struct {
	name   string
	opts   simulate.Options
	figure string // label that must be a Regression; "" for a clean run
	// any: the guarded rate is the comparison's verdict (exit 1) rather
	// than the figure's, for a change every figure sees.
	any bool
}

func latency(key string, f float64) simulate.Options {
	return simulate.Options{LatencyFactor: map[string]float64{key: f}}
}

func powerScenarios() []powerScenario {
	return []powerScenario{
		{name: "clean", opts: simulate.Options{}},
		{name: "all endpoints +15%", opts: latency("*", 1.15), figure: "aggregate p95", any: true},
		{name: "actor_get +15%", opts: latency("actor_get", 1.15), figure: "actor_get median"},
		{name: "auth_login +15%", opts: latency("auth_login", 1.15), figure: "auth_login median"},
		{name: "auth_login +20%", opts: latency("auth_login", 1.2), figure: "auth_login p95"},
		{name: "auth_register +20%", opts: latency("auth_register", 1.2), figure: "auth_register p95"},
		{name: "1% errors", opts: simulate.Options{ErrorRate: 0.01}, figure: "aggregate error rate"},
		{name: "throughput −10%", opts: simulate.Options{ThroughputFactor: 0.9}, figure: "aggregate throughput"},
		// The service got faster but for one endpoint: a judge against
		// the other endpoints sees it rise by 11%, though it is
		// unchanged. Its median coming out Regression is a false alarm.
		{name: "all but auth_login −10%", opts: simulate.Options{LatencyFactor: map[string]float64{"*": 0.9, "auth_login": 1}}, figure: "auth_login median"},
	}
}

// powerSeeds are the seeds of a measurement: first, first+1, ….
func powerSeeds(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// powerRow counts one scenario at one design.
type powerRow struct {
	variant            int
	scenario           string
	baseRuns, candRuns int
	n                  int
	figure             int // the injected figure came out Regression
	any                int // any figure a Regression (exit code 1)
	anyCounts          bool
	miss               string
}

// powerCounts is one measurement's rows.
type powerCounts struct {
	rows []powerRow
	idx  map[[4]int]int
}

func (pc *powerCounts) row(v, s, k, m int, mk func() powerRow) *powerRow {
	key := [4]int{v, s, k, m}
	i, ok := pc.idx[key]
	if !ok {
		i = len(pc.rows)
		pc.idx[key] = i
		pc.rows = append(pc.rows, mk())
	}
	return &pc.rows[i]
}

// simRun draws one run of the fitted model with the noise model
// -power.noise names (the real run-level variance unless told).
func simRun(fit *simulate.Model, o simulate.Options, seed uint64, name string) (figures.Run, error) {
	v, err := powerVariance()
	if err != nil {
		return figures.Run{}, err
	}
	o.Seed, o.Variance = seed, v
	return fit.Run(o, name)
}

// powerVariance is the noise model -power.noise names: "real"
// (simulate.RealVariance, the published tables and the guards) or
// "clustered" (simulate.ClusteredVariance: slow requests that come
// together within a run, as in real runs).
func powerVariance() (simulate.Variance, error) {
	switch *powerNoise {
	case "real":
		return simulate.RealVariance(), nil
	case "clustered":
		return simulate.ClusteredVariance(), nil
	}
	return simulate.Variance{}, fmt.Errorf("-power.noise %q: want real or clustered", *powerNoise)
}

// measurePower compares, for each seed, candidates of each scenario
// against envelopes of the first k of the seed's baseline runs, for each
// k in baseRuns and m in candRuns, under each variant.
func measurePower(seeds []uint64, baseRuns, candRuns []int, scenarios []powerScenario, variants []powerVariant) ([]powerRow, error) {
	model, err := demo.Envelope()
	if err != nil {
		return nil, err
	}
	fit, err := simulate.Fit(model)
	if err != nil {
		return nil, err
	}
	maxK, maxM := slices.Max(baseRuns), slices.Max(candRuns)
	pc := &powerCounts{idx: map[[4]int]int{}}
	for _, seed := range seeds {
		// Seeds of one measurement's runs never overlap: 100 per seed.
		next := seed * 100
		var base []figures.Run
		for i := range maxK {
			in, err := simRun(fit, simulate.Options{}, next, fmt.Sprintf("seed%d-base%d", seed, i+1))
			if err != nil {
				return nil, err
			}
			next++
			base = append(base, in)
		}
		envs := make([]*envelope.Envelope, len(baseRuns))
		for ki, k := range baseRuns {
			if envs[ki], err = envelope.Compute(base[:k], envelope.Options{Name: fmt.Sprintf("seed%d-k%d", seed, k)}); err != nil {
				return nil, err
			}
		}
		for si, sc := range scenarios {
			var cands []figures.Run
			for j := range maxM {
				in, err := simRun(fit, sc.opts, next, fmt.Sprintf("seed%d-%d-%d", seed, si, j))
				if err != nil {
					return nil, err
				}
				next++
				cands = append(cands, in)
			}
			for ki, env := range envs {
				for mi, m := range candRuns {
					for vi, v := range variants {
						res, err := v.variant.compare(env, cands[:m])
						if err != nil {
							return nil, fmt.Errorf("seed %d, %s, %d+%d runs: %w", seed, sc.name, baseRuns[ki], m, err)
						}
						r := pc.row(vi, si, ki, mi, func() powerRow {
							return powerRow{variant: vi, scenario: sc.name, baseRuns: baseRuns[ki], candRuns: m, anyCounts: sc.any}
						})
						r.count(res, sc, seed)
					}
				}
			}
		}
	}
	return pc.rows, nil
}

// count adds one comparison to the row.
func (r *powerRow) count(res *Result, sc powerScenario, seed uint64) {
	r.n++
	if res.Regressed {
		r.any++
	}
	for _, f := range res.Figures {
		switch {
		case sc.figure != "" && f.Label() == sc.figure:
			if f.Verdict == Regression {
				r.figure++
			} else if r.miss == "" {
				r.miss = fmt.Sprintf("seed %d: %s %s %+.1f%% [%+.1f, %+.1f] p_holm %.3g %s", seed, f.Label(), f.Verdict, f.ChangePct, f.CILowPct, f.CIHighPct, f.PHolm, f.Note)
			}
		case sc.figure == "" && f.Verdict == Regression && r.miss == "":
			r.miss = fmt.Sprintf("seed %d: false alarm %s %+.1f%% [%+.1f, %+.1f] p_holm %.3g", seed, f.Label(), f.ChangePct, f.CILowPct, f.CIHighPct, f.PHolm)
		}
	}
}

// rate is the row's measured rate: the injected figure flagged, or for
// the clean scenario any figure falsely flagged.
func (r powerRow) rate() (k, n int) {
	if r.scenario == "clean" || r.anyCounts {
		return r.any, r.n
	}
	return r.figure, r.n
}

// powerTable renders one variant's rows as Markdown.
func powerTable(rows []powerRow, variant int) string {
	var b strings.Builder
	b.WriteString("| Scenario | Figure | Baseline runs | Candidate runs | Seeds | Figure flagged | Any Regression (exit 1; clean: false) |\n")
	b.WriteString("| :-- | :-- | --: | --: | --: | --: | --: |\n")
	pct := func(k, n int) string { return fmt.Sprintf("%d/%d (%.0f%%)", k, n, 100*float64(k)/float64(n)) }
	figs := map[string]string{}
	for _, sc := range powerScenarios() {
		figs[sc.name] = sc.figure
	}
	for _, r := range rows {
		if r.variant != variant {
			continue
		}
		fig, flagged := figs[r.scenario], pct(r.figure, r.n)
		if fig == "" {
			fig, flagged = "–", "–"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %s | %s |\n", r.scenario, fig, r.baseRuns, r.candRuns, r.n, flagged, pct(r.any, r.n))
	}
	return b.String()
}

// powerFloor is one guarded rate of the default rule at 5 baseline runs
// and the given candidate runs: flagged k of n comparisons in
// BenchmarkComparePowerDesign (seeds 1–100, and 1001–1100 where n is
// 200, and 2001–2300 where it is 500; docs/compare.md). The guard over
// fewer seeds asserts the binomial lower bound below it
// (statstest.BinomialFloor), never the measurement; a ceiling (a rate
// that must stay low: an endpoint that did not change called a
// Regression, a clean run raising one) the binomial upper bound above it.
type powerFloor struct {
	scenario string
	candRuns int
	k, n     int
	ceiling  bool
}

// rate is the measured rate a guard's bound starts from
// (statstest.MeasuredRate: k/n, or a one-sided 95% bound where the
// measurement never saw the rate fail, or for a ceiling occur).
func (fl powerFloor) rate() float64 { return statstest.MeasuredRate(fl.k, fl.n, fl.ceiling) }

// cleanRisk is the risk of a clean guard's ceiling, which is taken at
// twice the measured rate: a false alarm rate of a few in 500 is known
// only to a factor of about two, and a guard that fails on a harmless
// reseed guards nothing.
const cleanRisk = 1e-3

// bound is the share of n seeds the guard asserts: at least it for a
// floor, at most it for a ceiling. The clean runs' ceiling is the
// largest count whose binomial tail under twice the measured rate is
// still at least cleanRisk.
func (fl powerFloor) bound(n int) float64 {
	switch {
	case fl.ceiling && fl.scenario == "clean":
		return statstest.BinomialCeiling(n, 2*fl.rate(), cleanRisk)
	case fl.ceiling:
		return statstest.BinomialCeiling(n, fl.rate(), statstest.GuardRisk)
	}
	return statstest.BinomialFloor(n, fl.rate(), statstest.GuardRisk)
}

// powerFloors are the guarded rates (docs/compare.md).
var powerFloors = []powerFloor{
	// Clean runs: false Regressions in 3 of 500 comparisons of 1 run and
	// 2 of 500 of 3 runs.
	{"clean", 1, 3, 500, true},
	{"clean", 3, 2, 500, true},
	{"all endpoints +15%", 3, 190, 200, false},
	{"actor_get +15%", 1, 187, 200, false},
	{"actor_get +15%", 3, 200, 200, false},
	{"auth_login +15%", 1, 94, 200, false},
	{"auth_login +15%", 3, 192, 200, false},
	{"auth_login +20%", 3, 157, 200, false},
	{"auth_register +20%", 3, 100, 100, false},
	{"1% errors", 1, 100, 100, false},
	{"1% errors", 3, 100, 100, false},
	{"throughput −10%", 1, 100, 100, false},
	{"throughput −10%", 3, 100, 100, false},
	// The service 10% faster but for auth_login: its median, unchanged,
	// must rarely be a Regression.
	{"all but auth_login −10%", 3, 9, 200, true},
}

// checkFloors returns each guarded rate of variant that falls outside
// its bound over the rows' seeds, and each clean comparison that raised
// a Regression.
func checkFloors(rows []powerRow, variant int) []string {
	var fails []string
	for _, r := range rows {
		if r.variant != variant || r.baseRuns != 5 {
			continue
		}
		for _, fl := range powerFloors {
			if fl.scenario != r.scenario || fl.candRuns != r.candRuns {
				continue
			}
			bound := fl.bound(r.n)
			k, n := r.rate()
			got := float64(k) / float64(n)
			switch {
			case fl.ceiling && r.scenario == "clean" && got > bound:
				fails = append(fails, fmt.Sprintf("clean, %d candidate run(s): %d of %d comparisons raised a Regression (%.0f%%), ceiling %.0f%% (measured %d of %d); first: %s",
					r.candRuns, k, n, 100*got, 100*bound, fl.k, fl.n, r.miss))
			case fl.ceiling && got > bound:
				fails = append(fails, fmt.Sprintf("%s, %d candidate run(s): %s flagged %d of %d (%.0f%%), ceiling %.0f%% (measured %d of %d)",
					r.scenario, r.candRuns, powerFigure(r.scenario), k, n, 100*got, 100*bound, fl.k, fl.n))
			case !fl.ceiling && got < bound:
				fails = append(fails, fmt.Sprintf("%s, %d candidate run(s): flagged %d of %d (%.0f%%), floor %.0f%% (measured %d of %d); %s",
					r.scenario, r.candRuns, k, n, 100*got, 100*bound, fl.k, fl.n, r.miss))
			}
		}
	}
	return fails
}

// powerFigure is the figure a scenario watches.
func powerFigure(scenario string) string {
	for _, sc := range powerScenarios() {
		if sc.name == scenario {
			return sc.figure
		}
	}
	return ""
}

// TestSimulatedEndpointRegression takes the full path: NDJSON runs that
// `envelope simulate` writes, read by the k6 loader with their points.
// Against five baseline runs, a run with auth_login 60% slower has its
// auth_login p95 flagged as a Regression, with its own sampling error in
// the interval.
func TestSimulatedEndpointRegression(t *testing.T) {
	model, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	fit, err := simulate.Fit(model)
	if err != nil {
		t.Fatal(err)
	}
	load := func(o simulate.Options, name string) figures.Run {
		var buf bytes.Buffer
		if err := fit.Write(&buf, o); err != nil {
			t.Fatal(err)
		}
		in, err := figures.ReadRun(name, &buf, figures.LoadOptions(0, ""))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	var base []figures.Run
	for seed := uint64(1); seed <= 5; seed++ {
		base = append(base, load(simulate.Options{Seed: seed}, fmt.Sprintf("base-%d.ndjson", seed)))
	}
	env, err := envelope.Compute(base, envelope.Options{Name: "simulated"})
	if err != nil {
		t.Fatal(err)
	}
	cand := load(simulate.Options{Seed: 7, LatencyFactor: map[string]float64{"auth_login": 1.6}}, "slow-auth.ndjson")
	res, err := Compare(env, []figures.Run{cand}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := figure(t, res, "auth_login p95")
	if f.Verdict != Regression || !strings.Contains(f.Method, "candidate sampling error") || f.ChangePct < 40 || f.ChangePct > 80 {
		t.Errorf("auth_login p95 %s %+.1f%% [%+.1f, %+.1f] p_holm %.3g (%s), want a Regression near +60%%", f.Verdict, f.ChangePct, f.CILowPct, f.CIHighPct, f.PHolm, f.Method)
	}
	if !res.Regressed {
		t.Error("comparison not regressed")
	}
}

// brokenVariant is the default judgement with its policy broken on
// purpose: 50% confidence and a latency tolerance of (nearly) zero, so
// clean runs raise false Regressions. The clean guards must catch it.
func brokenVariant() powerVariant {
	return powerVariant{"broken on purpose: confidence 0.5, latency tolerance 0",
		variant{opts: Options{Tolerance: figures.Tolerance{Confidence: 0.5, LatencyRise: 1e-9}}}}
}

// TestComparePower is the guard CI runs: seeds 101–120 (apart from the
// seeds measured), 5 baseline runs, 1 and 3 candidate runs. Every floor
// is the binomial lower bound (0.5% risk) below the rate measured over
// 100 or 200 seeds, the ceilings the upper bound above it (for clean
// runs at twice the measured false-alarm rate, 0.1% risk). Endpoint
// medians judged on their own, judged against the other endpoints alone,
// and a policy broken on purpose (confidence 0.5, tolerance 0) are
// judged on the same runs and must fail the guard, the first a floor,
// the second the unchanged endpoint's ceiling, the third the clean
// runs' ceiling: the guard can fail.
func TestComparePower(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 540 runs")
	}
	variants := append(powerVariants()[:3], brokenVariant())
	rows, err := measurePower(powerSeeds(101, 20), []int{5}, []int{1, 3}, powerScenarios(), variants)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", powerTable(rows, 0))
	for _, f := range checkFloors(rows, 0) {
		t.Error(f)
	}
	// Judged on their own, endpoint medians miss their floors; judged
	// against the other endpoints without asking the endpoint's own
	// estimate to rise, the unchanged endpoint breaks the ceiling; with
	// the policy broken, clean runs break theirs.
	for vi, want := range map[int]string{1: "actor_get +15%", 2: "all but auth_login −10%", 3: "clean, "} {
		fails := checkFloors(rows, vi)
		if !strings.Contains(strings.Join(fails, "\n"), want) {
			t.Errorf("%s: no failed guard on %s:\n%s", variants[vi].name, want, powerTable(rows, vi))
			continue
		}
		t.Logf("%s fails the guard, as it must: %s", variants[vi].name, strings.Join(fails, "; "))
	}
}

// BenchmarkComparePower is the full measurement behind the tables in
// docs/compare.md: seeds 1–50, every scenario, 3 and 5 baseline runs, 1
// and 3 candidate runs, every variant.
//
//	go test ./internal/compare/ -run '^$' -bench ComparePower -benchtime 1x -v
func BenchmarkComparePower(b *testing.B) {
	for b.Loop() {
		variants := powerVariants()
		if *powerVars > 0 {
			variants = variants[:*powerVars]
		}
		rows, err := measurePower(powerSeeds(1, 50), []int{3, 5}, []int{1, 3}, powerScenarios(), variants)
		if err != nil {
			b.Fatal(err)
		}
		for vi, v := range variants {
			b.Logf("%s (noise model %s)\n%s", v.name, *powerNoise, powerTable(rows, vi))
			for _, f := range checkFloors(rows, vi) {
				b.Logf("below floor: %s", f)
			}
		}
	}
}

var (
	powerFirst = flag.Uint64("power.first", 1, "BenchmarkComparePowerDesign: first seed")
	powerN     = flag.Int("power.seeds", 50, "BenchmarkComparePowerDesign: number of seeds")
	powerScen  = flag.String("power.scenarios", "", "BenchmarkComparePowerDesign: scenarios (comma-separated names; empty: all)")
	powerVars  = flag.Int("power.variants", 0, "BenchmarkComparePower, BenchmarkComparePowerDesign: measure only the first n variants (0: all)")
	powerNoise = flag.String("power.noise", "real", `BenchmarkComparePower, BenchmarkComparePowerDesign: noise model of the runs, "real" (simulate.RealVariance) or "clustered" (simulate.ClusteredVariance)`)
)

// BenchmarkComparePowerDesign measures the design the goals are set at
// (5 baseline runs, 1 and 3 candidate runs) over -power.seeds seeds from
// -power.first, every variant, for the scenarios -power.scenarios names:
//
//	go test ./internal/compare/ -run '^$' -bench ComparePowerDesign -benchtime 1x -v -power.seeds 300 -power.scenarios clean
func BenchmarkComparePowerDesign(b *testing.B) {
	scen := powerScenarios()
	if *powerScen != "" {
		want := strings.Split(*powerScen, ",")
		scen = slices.DeleteFunc(scen, func(s powerScenario) bool { return !slices.Contains(want, s.name) })
	}
	for b.Loop() {
		variants := powerVariants()
		if *powerVars > 0 {
			variants = variants[:*powerVars]
		}
		rows, err := measurePower(powerSeeds(*powerFirst, *powerN), []int{5}, []int{1, 3}, scen, variants)
		if err != nil {
			b.Fatal(err)
		}
		for vi, v := range variants {
			b.Logf("%s (noise model %s)\n%s", v.name, *powerNoise, powerTable(rows, vi))
		}
		b.Logf("every variant side by side (noise model %s)\n%s", *powerNoise, powerSummary(rows, variants))
	}
}

// powerSummary renders the rate each variant's rows measure (for clean
// runs any Regression, else the guarded rate) as one Markdown table, a
// variant a row and a scenario at 1 and 3 candidate runs a column.
func powerSummary(rows []powerRow, variants []powerVariant) string {
	type col struct {
		scenario string
		candRuns int
	}
	var cols []col
	cell := map[int]map[col]string{}
	for _, r := range rows {
		c := col{r.scenario, r.candRuns}
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
		if cell[r.variant] == nil {
			cell[r.variant] = map[col]string{}
		}
		k, n := r.rate()
		cell[r.variant][c] = fmt.Sprintf("%d/%d (%.1f%%)", k, n, 100*float64(k)/float64(n))
	}
	var b strings.Builder
	b.WriteString("| Variant |")
	for _, c := range cols {
		fmt.Fprintf(&b, " %s, %d run(s) |", c.scenario, c.candRuns)
	}
	b.WriteString("\n| :-- |" + strings.Repeat(" --: |", len(cols)) + "\n")
	for vi, v := range variants {
		fmt.Fprintf(&b, "| %s |", v.name)
		for _, c := range cols {
			fmt.Fprintf(&b, " %s |", cell[vi][c])
		}
		b.WriteString("\n")
	}
	return b.String()
}
