package simulate

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// timed is one request of a run, real or simulated: seconds into the
// run, endpoint and latency in ms.
type timed struct {
	at float64
	ep string
	ms float64
}

// timedRun is a run's requests in time order and its length in seconds.
type timedRun struct {
	secs float64
	reqs []timed
}

// seriesKey names one series a run gives: an endpoint's ("" for the
// aggregate) median, p95 or p99, or the request rate (figures.RPS).
type seriesKey struct {
	ep  string
	fig figures.Name
}

func (k seriesKey) String() string {
	if k.ep == "" {
		return "aggregate " + string(k.fig)
	}
	return k.ep + " " + string(k.fig)
}

// spread is a series' two spreads, sd of the natural log: from run to
// run (pooled within groups of runs made under the same settings) and
// between the halves of one run (the root mean square of log(second
// half / first half) over 2: the sampling sd of the whole run's value
// that the halves show, which counts requests that are slow together).
type spread struct {
	runs, halves float64
	runDF        int
}

// value is the series' log value of requests xs over secs seconds:
// the log request rate for figures.RPS, else the log percentile.
func value(k seriesKey, xs []float64, secs float64) float64 {
	if k.fig == figures.RPS {
		return math.Log(float64(len(xs)) / secs)
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return math.Log(stats.Quantile(s, k.fig.Def().Quantile))
}

// seriesOf lists the series every run of groups supports: throughput,
// and each percentile of the aggregate and of each endpoint that every
// run has enough requests for (figures.Def.Supported).
func seriesOf(groups [][]timedRun) []seriesKey {
	least := map[string]int64{}
	first := true
	for _, g := range groups {
		for _, r := range g {
			n := map[string]int64{"": int64(len(r.reqs))}
			for _, q := range r.reqs {
				n[q.ep]++
			}
			for ep, c := range n {
				if old, ok := least[ep]; first || ok && c < old {
					least[ep] = c
				}
			}
			for ep := range least {
				if _, ok := n[ep]; !ok {
					least[ep] = 0
				}
			}
			first = false
		}
	}
	eps := make([]string, 0, len(least))
	for ep := range least {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	out := []seriesKey{{"", figures.RPS}}
	for _, ep := range eps {
		for _, f := range figures.Percentiles() {
			if least[ep] > 0 && f.Def().Supported(least[ep]) {
				out = append(out, seriesKey{ep, f})
			}
		}
	}
	return out
}

// spreads measures each series' spreads over groups of runs.
func spreads(groups [][]timedRun, keys []seriesKey) map[seriesKey]spread {
	out := map[seriesKey]spread{}
	for _, k := range keys {
		var ss, hs float64
		df, n := 0, 0
		for _, g := range groups {
			var ys []float64
			for _, r := range g {
				var all, half [2][]float64
				for _, q := range r.reqs {
					if k.ep != "" && q.ep != k.ep {
						continue
					}
					h := 0
					if q.at >= r.secs/2 {
						h = 1
					}
					all[0] = append(all[0], q.ms)
					half[h] = append(half[h], q.ms)
				}
				ys = append(ys, value(k, all[0], r.secs))
				d := value(k, half[1], r.secs/2) - value(k, half[0], r.secs/2)
				hs += d * d
				n++
			}
			m := stats.Mean(ys)
			for _, y := range ys {
				ss += (y - m) * (y - m)
			}
			df += len(ys) - 1
		}
		out[k] = spread{runs: math.Sqrt(ss / float64(df)), halves: math.Sqrt(hs/float64(n)) / 2, runDF: df}
	}
	return out
}

// realTimed are the history fixture's runs grouped by constant settings
// (fixtures.HistoryCleanGroups: run 20 left out), with their requests.
func realTimed(tb testing.TB) [][]timedRun {
	tb.Helper()
	realOnce.Lock()
	defer realOnce.Unlock()
	if realCache != nil {
		return realCache
	}
	for _, g := range fixtures.HistoryCleanGroups(tb) {
		var runs []timedRun
		for _, p := range g {
			r, err := k6.Load(p, k6.LoadOptions{KeepPoints: true, Stats: []string{"count"}})
			if err != nil {
				tb.Fatal(err)
			}
			// Times from the run's start and its length as the figures
			// read them (first to last point of any metric).
			tr := timedRun{secs: r.Duration.Seconds()}
			for _, pt := range r.Points {
				if pt.Metric == k6.HTTPReqDuration {
					tr.reqs = append(tr.reqs, timed{at: pt.Time.Sub(r.Start).Seconds(), ep: pt.Tags["name"], ms: pt.Value})
				}
			}
			runs = append(runs, tr)
		}
		realCache = append(realCache, runs)
	}
	return realCache
}

var (
	realOnce  sync.Mutex
	realCache [][]timedRun
)

// historyModel is the model the change-point power tests draw with:
// fitted to the history's clean runs 01–10, the request mix their
// counts', and the runs' mean length.
func historyModel(tb testing.TB) (*Model, time.Duration) {
	tb.Helper()
	clean := fixtures.HistoryCleanGroups(tb)[0]
	in, err := figures.ReadFiles(clean, figures.LoadOptions(0, ""))
	if err != nil {
		tb.Fatal(err)
	}
	env, err := envelope.Compute(in, envelope.Options{Name: "history-shared"})
	if err != nil {
		tb.Fatal(err)
	}
	var total, secs float64
	counts := map[string]float64{}
	for _, r := range env.Runs {
		for k, e := range r.Endpoints {
			counts[k] += float64(e.Count)
			total += float64(e.Count)
		}
		secs += r.DurationSeconds
	}
	for k, e := range env.Endpoints {
		e.Share = counts[k] / total
		env.Endpoints[k] = e
	}
	m, err := Fit(env)
	if err != nil {
		tb.Fatal(err)
	}
	return m, time.Duration(secs / float64(len(env.Runs)) * float64(time.Second))
}

// simTimed draws n runs of m under v, seeds 1..n, as one group.
func simTimed(tb testing.TB, m *Model, dur time.Duration, v Variance, n int) [][]timedRun {
	tb.Helper()
	var runs []timedRun
	for seed := uint64(1); seed <= uint64(n); seed++ {
		d, err := m.draw(Options{Seed: seed, Duration: dur, Variance: v})
		if err != nil {
			tb.Fatal(err)
		}
		tr := timedRun{secs: dur.Seconds()}
		for _, q := range d.requests {
			tr.reqs = append(tr.reqs, timed{at: q.at, ep: d.model.Endpoints[q.ep].Key, ms: q.ms})
		}
		runs = append(runs, tr)
	}
	return [][]timedRun{runs}
}

// fidelityTable is real against simulated spreads, series by series.
func fidelityTable(keys []seriesKey, real, sim map[seriesKey]spread) string {
	var b strings.Builder
	b.WriteString("| series | run to run, real | simulated | ratio | run halves, real | simulated | ratio |\n| :-- | --: | --: | --: | --: | --: | --: |\n")
	for _, k := range keys {
		r, s := real[k], sim[k]
		fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |\n", k, r.runs, s.runs, s.runs/r.runs, r.halves, s.halves, s.halves/r.halves)
	}
	return b.String()
}

// fidelityRuns is how many simulated runs the fidelity test draws: the
// simulated spreads are then within about ±4% of the model's (a sd from
// 400 runs), so the ±40% band is the real runs' own uncertainty (27 and
// 29 degrees of freedom: about ±13%) with room to spare.
const fidelityRuns = 400

// shapeOnly are the spreads whose miss is the latency model's shape, not
// the noise model's: the aggregate p95 of the history runs lies where
// auth_login's upper tail meets auth_register's lower one, and the
// log-normals Fit draws there from the envelope's bands are thinner than
// the real distributions (the simulated runs' log p96/p94 is about 1.25
// times the real runs'), so the same spread of ranks is a wider spread of
// log latency. These are compared in ranks: each side's spread over its
// own mean log p(q+1%)/p(q−1%).
var shapeOnly = map[string]bool{"aggregate p95 run halves": true}

// slope is the mean over runs of the log ratio of the series' quantiles
// one percentage point either side of its own.
func slope(groups [][]timedRun, k seriesKey) float64 {
	q := k.fig.Def().Quantile
	var s float64
	n := 0
	for _, g := range groups {
		for _, r := range g {
			var xs []float64
			for _, x := range r.reqs {
				if k.ep == "" || x.ep == k.ep {
					xs = append(xs, x.ms)
				}
			}
			slices.Sort(xs)
			s += math.Log(stats.Quantile(xs, q+0.01) / stats.Quantile(xs, q-0.01))
			n++
		}
	}
	return s / float64(n)
}

// misfits lists the series whose simulated spreads under v are not
// within ±40% of the real runs' (shapeOnly ones in ranks), with the
// table of all of them.
func misfits(t *testing.T, v Variance) ([]string, string) {
	t.Helper()
	real := realTimed(t)
	keys := seriesOf(real)
	rs := spreads(real, keys)
	m, dur := historyModel(t)
	sim := simTimed(t, m, dur, v, fidelityRuns)
	ss := spreads(sim, keys)
	var out []string
	for _, k := range keys {
		for _, c := range []struct {
			what      string
			real, sim float64
		}{{"run to run", rs[k].runs, ss[k].runs}, {"run halves", rs[k].halves, ss[k].halves}} {
			name := k.String() + " " + c.what
			r, unit := c.sim/c.real, ""
			if shapeOnly[name] {
				sr, ss := slope(real, k), slope(sim, k)
				r *= sr / ss
				unit = " in ranks"
				t.Logf("%s: ×%.2f in log latency, ×%.2f in ranks (log p(q+1%%)/p(q−1%%): real %.3f, simulated %.3f)", name, c.sim/c.real, r, sr, ss)
			}
			if r < 1/1.4 || r > 1.4 {
				out = append(out, fmt.Sprintf("%s: simulated %.3f, real %.3f (×%.2f%s)", name, c.sim, c.real, r, unit))
			}
		}
	}
	return out, fidelityTable(keys, rs, ss)
}

// Runs drawn with ClusteredVariance spread as the real runs do, series
// by series: throughput, and the aggregate's and each endpoint's median,
// p95 and p99 where the runs support them, from run to run and between
// the halves of one run, each within ±40% of the real runs'.
func TestClusteredFidelity(t *testing.T) {
	bad, table := misfits(t, ClusteredVariance())
	t.Logf("ClusteredVariance %+v, %d runs:\n%s", ClusteredVariance(), fidelityRuns, table)
	for _, b := range bad {
		t.Error(b)
	}
}

// Without its within-run structure the same noise model misses the real
// runs: without bursts the fast endpoint's tail spreads too little
// within a run and from run to run, with Poisson arrivals the request
// rate spreads too much from run to run, without the drain too little
// between a run's halves; RealVariance misses on all three. The fidelity
// check can fail.
func TestClusteredFidelityNeedsClustering(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    func(Variance) Variance
		want []string // series that must be among the misfits
	}{
		{"no bursts", func(v Variance) Variance { v.Burst = Burst{}; return v }, []string{"actor_get p95 run halves"}},
		{"Poisson arrivals", func(v Variance) Variance { v.Arrivals = 0; return v }, []string{"aggregate rps run to run"}},
		{"no drain", func(v Variance) Variance { v.Drain = 0; return v }, []string{"aggregate rps run halves"}},
		{"RealVariance", func(Variance) Variance { return RealVariance() }, []string{"actor_get p95 run halves", "aggregate rps run to run"}},
	} {
		bad, table := misfits(t, tc.v(ClusteredVariance()))
		t.Logf("%s: misfits %q", tc.name, bad)
		for _, w := range tc.want {
			if !slices.ContainsFunc(bad, func(b string) bool { return strings.HasPrefix(b, w+":") }) {
				t.Errorf("%s: %s is not a misfit; misfits %q\n%s", tc.name, w, bad, table)
			}
		}
	}
}
