package changepoint

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/simulate"
	"github.com/envelope-dev/envelope/internal/simulate/simulatetest"
)

// runSimulator makes simulated histories of one test with the run
// simulator compare and the rules are measured with (internal/simulate):
// whole k6 runs of the service model fitted to the history fixture's
// clean runs (01–10), each drawn with its noise model (the run-level
// variance of real runs, simulate.RealVariance, unless made with
// withVariance) and the clean runs' mean length, and each run's figures
// computed as `history record` computes them (envelope.Compute over the
// one run). A scenario's changes are simulatetest.Steps.
type runSimulator struct {
	model    *simulate.Model
	test     string
	dur      time.Duration
	variance simulate.Variance

	mu        sync.Mutex
	cacheSeed uint64
	cache     map[string]map[Key]Run // one history seed's runs, by options
}

var (
	simOnce sync.Once
	simGen  *runSimulator
	simErr  error
)

// newRunSimulator fits the service model once per test binary.
func newRunSimulator(tb testing.TB) *runSimulator {
	tb.Helper()
	clean := fixtures.HistoryCleanGroups(tb)[0]
	simOnce.Do(func() {
		in, err := figures.ReadFiles(clean, figures.LoadOptions(0, ""))
		if err != nil {
			simErr = err
			return
		}
		env, err := envelope.Compute(in, envelope.Options{Name: "history-shared"})
		if err != nil {
			simErr = err
			return
		}
		// The request mix is the runs' own: each endpoint's share of the
		// endpoints' requests.
		var total float64
		counts := map[string]float64{}
		for _, r := range env.Runs {
			for k, e := range r.Endpoints {
				counts[k] += float64(e.Count)
				total += float64(e.Count)
			}
		}
		for k, e := range env.Endpoints {
			e.Share = counts[k] / total
			env.Endpoints[k] = e
		}
		m, err := simulate.Fit(env)
		if err != nil {
			simErr = err
			return
		}
		var secs float64
		for _, r := range env.Runs {
			secs += r.DurationSeconds
		}
		dur := time.Duration(secs / float64(len(env.Runs)) * float64(time.Second))
		simGen = &runSimulator{model: m, test: "history-shared", dur: dur, variance: simulate.RealVariance(), cache: map[string]map[Key]Run{}}
	})
	if simErr != nil {
		tb.Fatal(simErr)
	}
	return simGen
}

// withVariance is a simulator of the same service and run length
// drawing each run with noise model v (simulate.ClusteredVariance: slow
// requests that come together within a run).
func (g *runSimulator) withVariance(v simulate.Variance) *runSimulator {
	return &runSimulator{model: g.model, test: g.test, dur: g.dur, variance: v, cache: map[string]map[Key]Run{}}
}

// historySeed is the first run seed of history seed: run i of the
// history is seeded historySeed(seed)+i, so histories never share a run.
func historySeed(seed uint64) uint64 { return seed * 1000 }

// History draws n runs under scenario sc: run i is simulatetest.Sequence's
// i-th options with the scenario's steps.
func (g *runSimulator) History(tb testing.TB, sc scenario, n int, seed uint64) []Series {
	tb.Helper()
	var steps []simulatetest.Step
	if sc.steps != nil {
		steps = sc.steps(rand.New(rand.NewPCG(seed, 0x7374657073)))
	}
	g.mu.Lock()
	if seed != g.cacheSeed {
		clear(g.cache)
		g.cacheSeed = seed
	}
	g.mu.Unlock()
	opts := simulatetest.Sequence(simulate.Options{Seed: historySeed(seed), Duration: g.dur, Variance: g.variance}, n, steps...)
	var keys []Key
	byKey := map[Key]*Series{}
	for i, o := range opts {
		figs, err := g.run(o)
		if err != nil {
			tb.Fatal(err)
		}
		if i == 0 {
			for k := range figs {
				keys = append(keys, k)
			}
			slices.SortFunc(keys, func(a, b Key) int { return cmp.Compare(a.String(), b.String()) })
			for _, k := range keys {
				byKey[k] = &Series{Key: k, Polarity: k.Figure.Def().Polarity, Runs: make([]Run, n)}
			}
		}
		for k, r := range figs {
			if s, ok := byKey[k]; ok {
				r.Commit = fmt.Sprintf("s%03d", i+1)
				s.Runs[i] = r
			}
		}
	}
	out := make([]Series, len(keys))
	for j, k := range keys {
		out[j] = *byKey[k]
	}
	return out
}

// run is the figures of one simulated run; the scenarios of one history
// seed share the runs whose options they share (every run before their
// first change).
func (g *runSimulator) run(o simulate.Options) (map[Key]Run, error) {
	key := fmt.Sprintf("%d %v %g %g", o.Seed, o.LatencyFactor, o.ThroughputFactor, o.ErrorRate)
	g.mu.Lock()
	figs, ok := g.cache[key]
	g.mu.Unlock()
	if ok {
		return figs, nil
	}
	r, err := g.model.Run(o, o.TestID)
	if err != nil {
		return nil, err
	}
	figs = runFigures(g.test, r, "")
	g.mu.Lock()
	g.cache[key] = figs
	g.mu.Unlock()
	return figs, nil
}
