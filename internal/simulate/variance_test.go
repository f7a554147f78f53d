package simulate

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// realGroups loads the real runs the run-level variance is estimated
// from, grouped by the settings they were made under: the history's
// clean runs 01–10, its upload-step runs 11–19 and 21–22 (run-20 is a
// one-off slow run, left out), its auth-step runs 23–30; and the three
// 6-minute baselines of the same workload. Each run's own error is the
// order-statistic interval alone: RealVariance's requests are drawn
// independently, so its run-level variance is what the runs vary by
// beyond what independent requests would.
func realGroups(tb testing.TB) (history, baselines [][]figures.Run) {
	tb.Helper()
	opts := figures.LoadOptions(0, "")
	opts.IndependentIntervals = true
	load := func(paths []string) []figures.Run {
		in, err := figures.ReadFiles(paths, opts)
		if err != nil {
			tb.Fatal(err)
		}
		return in
	}
	for _, g := range fixtures.HistoryCleanGroups(tb) {
		history = append(history, load(g))
	}
	baselines = [][]figures.Run{load(fixtures.Baselines(tb))}
	return history, baselines
}

func componentTable(cs []component) string {
	var b strings.Builder
	b.WriteString("| family | runs | df | between-run var | mean within-run var | run-level var | run-level sd |\n|---|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s | %d | %d | %.6f | %.6f | %.6f | %.4f |\n", c.Family, c.Runs, c.DF, c.Between, c.Within, c.Run, c.SD)
	}
	return b.String()
}

// RealVariance is the estimate from the real runs: each family's larger
// estimate of the two sets (history, 6-minute baselines), to 3 decimals.
func TestRealVarianceEstimate(t *testing.T) {
	history, baselines := realGroups(t)
	vh, ch, err := estimateVariance(history)
	if err != nil {
		t.Fatal(err)
	}
	vb, cb, err := estimateVariance(baselines)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("history (groups 01–10, 11–19+21–22, 23–30): %+v\n%s", vh, componentTable(ch))
	t.Logf("6-minute baselines a, b, c: %+v\n%s", vb, componentTable(cb))
	want, rv := vh.larger(vb), RealVariance()
	for _, f := range []struct {
		name      string
		got, want float64
	}{{"latency", rv.Latency, want.Latency}, {"endpoint", rv.Endpoint, want.Endpoint}, {"throughput", rv.Throughput, want.Throughput}} {
		if math.Abs(f.got-f.want) > 0.0005 {
			t.Errorf("RealVariance().%s = %.4f, the real runs estimate %.4f", f.name, f.got, f.want)
		}
	}
}

// Runs drawn with RealVariance spread as the real runs do: the
// between-run variance of the log median, less its sampling variance,
// comes back near the model's run-level variance, and without it near 0.
func TestRunVarianceRoundTrip(t *testing.T) {
	env := demoEnvelope(t)
	m, err := Fit(env)
	if err != nil {
		t.Fatal(err)
	}
	est := func(v Variance) Variance {
		var runs []figures.Run
		for seed := uint64(1); seed <= 120; seed++ {
			r, err := m.Run(Options{Seed: seed, Duration: 2 * time.Minute, Variance: v}, fmt.Sprint(seed))
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		}
		got, _, err := estimateVariance([][]figures.Run{runs})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	rv := RealVariance()
	none, real := est(Variance{}), est(rv)
	t.Logf("no variance: %+v; RealVariance %+v: %+v", none, rv, real)
	// 39 df: the sd estimate is within about ±25% of the truth.
	total := math.Hypot(rv.Latency, rv.Endpoint)
	if none.Latency > 0.015 || real.Latency < 0.7*total || real.Latency > 1.3*total {
		t.Errorf("aggregate level sd: %.4f without variance, %.4f with (model %.4f)", none.Latency, real.Latency, total)
	}
}

// Run's iterations arrive as a Poisson stream (as Write's do): their
// count varies from seed to seed with a variance near its mean, so a
// history's iteration rate spreads as a real one's does.
func TestRunIterationsPoisson(t *testing.T) {
	m, err := Fit(demoEnvelope(t))
	if err != nil {
		t.Fatal(err)
	}
	var counts []float64
	for seed := uint64(1); seed <= 60; seed++ {
		r, err := m.Run(Options{Seed: seed, Duration: 20 * time.Second}, "it")
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, float64(r.Iterations))
	}
	mean, v := stats.MeanVar(counts)
	// 59 df: the variance of a Poisson count is estimated within ±40%
	// at about 2.3 standard errors.
	if want := m.IterRate * 20; math.Abs(mean-want) > 4*math.Sqrt(want/60) || v < 0.6*mean || v > 1.4*mean {
		t.Errorf("iterations: mean %.1f (rate × duration %.1f), variance %.1f", mean, want, v)
	}
}
