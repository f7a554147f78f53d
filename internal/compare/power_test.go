package compare

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/simulate"
	"github.com/envelope-dev/envelope/internal/stats"
)

// The power of compare, measured: baselines of simulated k6 runs of the
// demo envelope's workload (6-minute runs, four endpoints), one candidate
// run per scenario, over many seeds. Every simulated run also gets a
// between-run effect beyond sampling: each endpoint's latencies are
// multiplied by a log-normal factor with σ = powerRunEffect, drawn per run.

const powerRunEffect = 0.03

// powerScenario is one injected change and the figure that must catch it.
type powerScenario struct {
	name   string
	opts   simulate.Options
	figure string // label that must be a Regression; "" for a clean run
}

func powerScenarios() []powerScenario {
	return []powerScenario{
		{name: "clean run", opts: simulate.Options{}},
		{name: "auth_login +60%", opts: simulate.Options{LatencyFactor: map[string]float64{"auth_login": 1.6}}, figure: "auth_login p95"},
		{name: "auth_login +35%", opts: simulate.Options{LatencyFactor: map[string]float64{"auth_login": 1.35}}, figure: "auth_login p95"},
		{name: "auth_login +15%", opts: simulate.Options{LatencyFactor: map[string]float64{"auth_login": 1.15}}, figure: "auth_login p95"},
		{name: "actor_get +15%", opts: simulate.Options{LatencyFactor: map[string]float64{"actor_get": 1.15}}, figure: "actor_get p95"},
		{name: "all endpoints +30%", opts: simulate.Options{LatencyFactor: map[string]float64{"*": 1.3}}, figure: "aggregate p95"},
		{name: "1% errors", opts: simulate.Options{ErrorRate: 0.01}, figure: "aggregate error rate"},
		{name: "throughput −10%", opts: simulate.Options{ThroughputFactor: 0.9}, figure: "aggregate throughput"},
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

// powerRow counts one scenario at one baseline size.
type powerRow struct {
	scenario string
	baseRuns int
	n        int
	figure   int // the injected figure came out Regression
	beyond   int // its interval cleared the tolerance (before Holm)
	any      int // the comparison reported a regression (exit code 1)
	// The same with the envelope stripped to its bands, as files written
	// before per-run endpoint values were kept.
	bandFigure, bandAny int
	miss                string
}

// fastRun draws one 6-minute run from the model `exporter simulate`
// fits (simulate.Fit: Poisson requests at the envelope's rate, the
// request mix, a log-normal latency per endpoint) straight into a k6 run,
// as the loader would give it for the NDJSON file: statistics by k6's
// percentile formula and the latency points. Writing and parsing NDJSON
// for each of the hundreds of runs a measurement needs would cost over a
// second each; TestSimulatedEndpointRegression takes the NDJSON path.
func fastRun(model *simulate.Model, o simulate.Options, name string, rng *rand.Rand) (envelope.Input, error) {
	dur := 6 * time.Minute
	tf := o.ThroughputFactor
	if tf == 0 {
		tf = 1
	}
	secs := dur.Seconds()
	lambda := model.Rate * tf * secs
	n := int(math.Round(lambda + math.Sqrt(lambda)*rng.NormFloat64()))
	iters := int(math.Round(model.IterRate * tf * secs))
	cum := make([]float64, len(model.Endpoints))
	var acc float64
	for i, e := range model.Endpoints {
		acc += e.Share
		cum[i] = acc
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	all := make([]float64, 0, n)
	per := make([][]float64, len(model.Endpoints))
	points := make([]k6.Point, 0, 2*n)
	failed := 0
	for r := range n {
		u := rng.Float64() * acc
		i := sort.SearchFloat64s(cum, u)
		if i >= len(model.Endpoints) {
			i = len(model.Endpoints) - 1
		}
		e := model.Endpoints[i]
		f := 1.0
		if x, ok := o.LatencyFactor[e.Key]; ok {
			f = x
		}
		ms := math.Exp(e.Mu+e.Sigma*rng.NormFloat64()) * f
		if o.ErrorRate > 0 && rng.Float64() < o.ErrorRate {
			failed++
		}
		ts := start.Add(time.Duration(float64(r) / float64(n) * float64(dur)))
		all = append(all, ms)
		per[i] = append(per[i], ms)
		points = append(points, k6.Point{Metric: "http_req_duration", Time: ts, Value: ms}, k6.Point{Metric: e.Metric, Time: ts, Value: ms})
	}
	trend := func(name string, xs []float64) *k6.Metric {
		slices.Sort(xs)
		var sum float64
		for _, x := range xs {
			sum += x
		}
		m := &k6.Metric{Name: name, Parent: name, Type: k6.Trend, Contains: k6.Time, Mode: k6.ModeExact, Values: map[string]float64{"count": float64(len(xs))}}
		if len(xs) > 0 {
			m.Values["avg"] = sum / float64(len(xs))
			m.Values["min"], m.Values["max"] = xs[0], xs[len(xs)-1]
			for st, p := range map[string]float64{"med": 0.5, "p(90)": 0.9, "p(95)": 0.95, "p(99)": 0.99} {
				m.Values[st] = stats.Quantile(xs, p)
			}
		}
		return m
	}
	run := &k6.Run{Source: name, Format: k6.FormatNDJSON, Mode: k6.ModeExact, Start: start, End: start.Add(dur), Duration: dur, Points: points,
		Metrics: map[string]*k6.Metric{
			"http_reqs":         {Name: "http_reqs", Parent: "http_reqs", Type: k6.Counter, Values: map[string]float64{"count": float64(n), "rate": float64(n) / secs}},
			"iterations":        {Name: "iterations", Parent: "iterations", Type: k6.Counter, Values: map[string]float64{"count": float64(iters), "rate": float64(iters) / secs}},
			"http_req_failed":   {Name: "http_req_failed", Parent: "http_req_failed", Type: k6.Rate, Values: map[string]float64{"passes": float64(failed), "fails": float64(n - failed), "rate": float64(failed) / float64(n)}},
			"http_req_duration": trend("http_req_duration", all),
			"vus_max":           {Name: "vus_max", Parent: "vus_max", Type: k6.Gauge, Values: map[string]float64{"value": float64(model.VUs), "min": float64(model.VUs), "max": float64(model.VUs)}},
		}}
	for i, e := range model.Endpoints {
		run.Metrics[e.Metric] = trend(e.Metric, per[i])
	}
	return envelope.Input{Run: run, Source: envelope.Source{File: name, Format: string(k6.FormatNDJSON)}}, nil
}

// withRunEffect adds the between-run effect, one factor per endpoint,
// on top of the scenario's own factors.
func withRunEffect(model *envelope.Envelope, o simulate.Options, rng *rand.Rand) simulate.Options {
	f := map[string]float64{}
	names := make([]string, 0, len(model.Endpoints))
	for name := range model.Endpoints {
		names = append(names, name)
	}
	sort.Strings(names) // a fixed draw order: the same seed, the same runs
	for _, name := range names {
		f[name] = math.Exp(powerRunEffect * rng.NormFloat64())
		if x, ok := o.LatencyFactor["*"]; ok {
			f[name] *= x
		}
		if x, ok := o.LatencyFactor[name]; ok {
			f[name] *= x
		}
	}
	o.LatencyFactor = f
	return o
}

// measurePower runs every scenario against baselines of each size in
// baseRuns (the first k of the same maxK simulated baseline runs), for
// each seed.
func measurePower(seeds []uint64, baseRuns []int, scenarios []powerScenario) ([]powerRow, error) {
	model, err := demo.Envelope()
	if err != nil {
		return nil, err
	}
	fit, err := simulate.Fit(model)
	if err != nil {
		return nil, err
	}
	maxK := 0
	for _, k := range baseRuns {
		maxK = max(maxK, k)
	}
	rows := make([]powerRow, 0, len(scenarios)*len(baseRuns))
	idx := map[[2]int]int{}
	for si, sc := range scenarios {
		for ki, k := range baseRuns {
			idx[[2]int{si, ki}] = len(rows)
			rows = append(rows, powerRow{scenario: sc.name, baseRuns: k})
		}
	}
	names := make([]string, maxK)
	for _, seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 0x706f776572))
		var base []envelope.Input
		for i := range maxK {
			names[i] = fmt.Sprintf("seed%d-base%d.ndjson", seed, i+1)
			in, err := fastRun(fit, withRunEffect(model, simulate.Options{}, rng), names[i], rng)
			if err != nil {
				return nil, err
			}
			base = append(base, in)
		}
		envs := make([]*envelope.Envelope, len(baseRuns))
		for ki, k := range baseRuns {
			if envs[ki], err = envelope.Compute(base[:k], envelope.Options{Name: fmt.Sprintf("seed%d-k%d", seed, k)}); err != nil {
				return nil, err
			}
		}
		bandsOnly := make([]*envelope.Envelope, len(envs))
		for ki, env := range envs {
			cp := *env
			cp.Runs = slices.Clone(env.Runs)
			for i := range cp.Runs {
				cp.Runs[i].Endpoints = nil
			}
			bandsOnly[ki] = &cp
		}
		for si, sc := range scenarios {
			in, err := fastRun(fit, withRunEffect(model, sc.opts, rng), fmt.Sprintf("seed%d-%d.ndjson", seed, si), rng)
			cand := in.Run
			if err != nil {
				return nil, err
			}
			for ki, env := range envs {
				res, err := Compare(env, []*k6.Run{cand}, Options{})
				if err != nil {
					return nil, fmt.Errorf("seed %d, %s, %d runs: %w", seed, sc.name, baseRuns[ki], err)
				}
				bands, err := Compare(bandsOnly[ki], []*k6.Run{cand}, Options{})
				if err != nil {
					return nil, fmt.Errorf("seed %d, %s, %d runs, bands only: %w", seed, sc.name, baseRuns[ki], err)
				}
				r := &rows[idx[[2]int{si, ki}]]
				if bands.Regressed {
					r.bandAny++
				}
				for _, f := range bands.Figures {
					if sc.figure != "" && f.Label() == sc.figure && f.Verdict == Regression {
						r.bandFigure++
					}
				}
				r.n++
				if res.Regressed {
					r.any++
				}
				for _, f := range res.Figures {
					if sc.figure != "" && f.Label() == sc.figure {
						if f.Verdict == Regression || strings.Contains(f.Note, "Holm") {
							r.beyond++
						}
						if f.Verdict == Regression {
							r.figure++
						} else if r.miss == "" {
							r.miss = fmt.Sprintf("seed %d: %s %s %+.1f%% [%+.1f, %+.1f] p_holm %.3g (%s) %s", seed, f.Label(), f.Verdict, f.ChangePct, f.CILowPct, f.CIHighPct, f.PHolm, f.Method, f.Note)
						}
					}
					if sc.figure == "" && f.Verdict == Regression && r.miss == "" {
						r.miss = fmt.Sprintf("seed %d: false alarm %s %+.1f%% [%+.1f, %+.1f] p_holm %.3g (%s)", seed, f.Label(), f.ChangePct, f.CILowPct, f.CIHighPct, f.PHolm, f.Method)
					}
				}
			}
		}
	}
	return rows, nil
}

// powerTable renders the rows as Markdown.
func powerTable(rows []powerRow) string {
	var b strings.Builder
	b.WriteString("| Scenario | Baseline runs | Seeds | Injected figure flagged | Its interval beyond tolerance (before Holm) | Any regression reported | Passed | Injected figure flagged, bands only |\n")
	b.WriteString("| :-- | --: | --: | --: | --: | --: | --: | --: |\n")
	pct := func(k, n int) string { return fmt.Sprintf("%d/%d (%.0f%%)", k, n, 100*float64(k)/float64(n)) }
	for _, r := range rows {
		fig, beyond, band := pct(r.figure, r.n), pct(r.beyond, r.n), pct(r.bandFigure, r.n)
		if r.scenario == "clean run" {
			fig, beyond, band = "–", "–", fmt.Sprintf("passed %s", pct(r.n-r.bandAny, r.n))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s |\n", r.scenario, r.baseRuns, r.n, fig, beyond, pct(r.any, r.n), pct(r.n-r.any, r.n), band)
	}
	return b.String()
}

// TestSimulatedEndpointRegression takes the full path: NDJSON runs that
// `exporter simulate` writes, read by the k6 loader with their points.
// Against three baseline runs, a run with auth_login 60% slower has its
// auth_login p95 flagged as a Regression, with its own sampling error in
// the interval.
func TestSimulatedEndpointRegression(t *testing.T) {
	model, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	load := func(o simulate.Options, name string) envelope.Input {
		var buf bytes.Buffer
		if err := simulate.Write(&buf, model, o); err != nil {
			t.Fatal(err)
		}
		in, err := envelope.ReadRun(name, &buf, k6.LoadOptions{KeepPoints: true, Stats: []string{"avg", "min", "med", "max", "p(90)", "p(95)", "p(99)", "count"}})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	var base []envelope.Input
	for seed := uint64(1); seed <= 3; seed++ {
		base = append(base, load(simulate.Options{Seed: seed}, fmt.Sprintf("base-%d.ndjson", seed)))
	}
	env, err := envelope.Compute(base, envelope.Options{Name: "simulated"})
	if err != nil {
		t.Fatal(err)
	}
	cand := load(simulate.Options{Seed: 4, LatencyFactor: map[string]float64{"auth_login": 1.6}}, "slow-auth.ndjson")
	res, err := Compare(env, []*k6.Run{cand.Run}, Options{})
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

// TestComparePower is the fast subset CI runs: 8 seeds at 3 and 5
// baseline runs, with floors well below the full measurement
// (docs/compare.md) so that only a real loss of power fails it.
func TestComparePower(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 88 runs")
	}
	scen := powerScenarios()
	rows, err := measurePower(powerSeeds(1, 8), []int{3, 5}, scen)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", powerTable(rows))
	for _, r := range rows {
		if r.miss != "" {
			t.Logf("%s, %d runs: %s", r.scenario, r.baseRuns, r.miss)
		}
	}
	// Floors on seeds 1–8 (deterministic), a little below what they
	// measure, so that only a loss of power fails.
	floors := []struct {
		scenario string
		measure  string // "passed", "figure" or "any"
		min      float64
	}{
		{"clean run", "passed", 0.85},
		{"auth_login +60%", "figure", 0.75},
		{"auth_login +35%", "figure", 0.25},
		{"all endpoints +30%", "any", 0.85},
		{"1% errors", "figure", 1},
		{"throughput −10%", "figure", 1},
	}
	for _, fl := range floors {
		for _, r := range rows {
			if r.scenario != fl.scenario {
				continue
			}
			got := map[string]int{"passed": r.n - r.any, "figure": r.figure, "any": r.any}[fl.measure]
			if share := float64(got) / float64(r.n); share < fl.min {
				t.Errorf("%s at %d baseline runs: %s %.2f, want ≥ %.2f", r.scenario, r.baseRuns, fl.measure, share, fl.min)
			}
		}
	}
	// Per-run values never detect less than the bands did.
	for _, r := range rows {
		if r.scenario != "clean run" && r.figure < r.bandFigure {
			t.Errorf("%s at %d baseline runs: %d flagged from per-run values, %d from bands only", r.scenario, r.baseRuns, r.figure, r.bandFigure)
		}
	}
}

// BenchmarkComparePower is the full measurement behind the table in
// docs/compare.md: seeds 1–50, every scenario, 3 and 5 baseline runs.
//
//	go test ./internal/compare/ -run '^$' -bench ComparePower -benchtime 1x -v
func BenchmarkComparePower(b *testing.B) {
	for b.Loop() {
		rows, err := measurePower(powerSeeds(1, 50), []int{3, 5}, powerScenarios())
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("\n%s", powerTable(rows))
	}
}
