package figures

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// coverageRuns are the real runs a run's own error is checked on: the
// clean history runs 01–10 (45 s) and every point stream of the
// baseline-mix runs (6 minutes, and a one-minute run).
func coverageRuns(t *testing.T) []string {
	var paths []string
	for i := 1; i <= 10; i++ {
		paths = append(paths, fixtures.Path(t, fmt.Sprintf("k6/history-v2.2.0/run-%02d.ndjson.gz", i)))
	}
	return append(paths, fixtures.Glob(t, "k6/baseline-mix-v2.2.0/*.ndjson.gz")...)
}

// halfFigure is one half of a run: its figures, and each latency
// trend's samples (from the kept points) for the order-statistic
// interval alone.
type halfFigure struct {
	run     Run
	samples map[string][]float64 // by endpoint key, "" the aggregate
}

// loadHalf reads the part [from, to) of a run (to 0: to its end).
func loadHalf(t *testing.T, path string, mode k6.Mode, from, to float64) halfFigure {
	t.Helper()
	opts := LoadOptions(0, "")
	opts.Mode, opts.KeepPoints = mode, true
	opts.From, opts.To = secs(from), secs(to)
	r, err := k6.Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Read(r, Source{File: filepath.Base(path)}, OptionsOf(opts))
	if err != nil {
		t.Fatal(err)
	}
	h := halfFigure{run: f, samples: map[string][]float64{}}
	for _, p := range r.Points {
		switch {
		case p.Metric == k6.HTTPReqDuration:
			h.samples[""] = append(h.samples[""], p.Value)
		case f.Endpoints != nil:
			if _, ok := f.Endpoints[p.Metric]; ok {
				h.samples[p.Metric] = append(h.samples[p.Metric], p.Value)
			}
		}
	}
	for _, xs := range h.samples {
		slices.Sort(xs)
	}
	return h
}

// A run's own error of a percentile holds on real runs, whose slow
// requests come in bursts: for every run, endpoint and percentile the
// run supports, the figure of the run's first half and of its second
// half differ by at most z·√(se₁² + se₂²) (95%) about as often as that
// says, with each half's se read from its interval as every judge
// reads it, and their squared difference over se₁² + se₂² is at most
// about 1 on average (a χ² of one degree of freedom, when the error is
// right). Most figures of these runs are not clustered, so the
// order-statistic interval alone, which assumes independent requests,
// still covers most of them; it fails the second check, through the
// fast endpoint whose slow requests come together (actor_get).
func TestOwnErrorCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every fixture run three times")
	}
	const (
		guard    = 0.85 // least share within z·se at 95%
		maxSqErr = 1.2  // most mean of (difference/se)²
	)
	z := stats.NormalQuantile(0.975)
	for _, mode := range []k6.Mode{k6.ModeExact, k6.ModeSketch} {
		t.Run(string(mode), func(t *testing.T) {
			var held, heldOrder, checked int
			var sq, sqOrder float64
			byFigure := map[Name][2]int{}
			for _, path := range coverageRuns(t) {
				whole := loadHalf(t, path, mode, 0, 0)
				mid := whole.run.DurationSeconds / 2
				h := [2]halfFigure{loadHalf(t, path, mode, 0, mid), loadHalf(t, path, mode, mid, 0)}
				for _, ep := range append([]string{""}, whole.run.EndpointKeys()...) {
					l, _ := whole.run.Of(ep)
					for _, n := range Percentiles() {
						if !n.Def().Supported(l.Count) {
							continue
						}
						k := Key{Endpoint: ep, Figure: n}
						var x, se, seOrder [2]float64
						ok := true
						for i := range h {
							v, has := h[i].run.Value(k)
							if !has || v.CI == nil {
								ok = false
								break
							}
							x[i], se[i] = v.X, math.Sqrt(v.LogVar(n))
							lo, hi, ciOK := stats.QuantileCI(h[i].samples[ep], n.Def().Quantile, IntervalConfidence)
							if !ciOK {
								ok = false
								break
							}
							seOrder[i] = stats.LogSEOfInterval(lo, hi, IntervalConfidence)
						}
						if !ok {
							t.Errorf("%s %s: a half has no interval", filepath.Base(path), k)
							continue
						}
						d := math.Abs(math.Log(x[1] / x[0]))
						checked++
						c := byFigure[n]
						c[1]++
						if d <= z*math.Hypot(se[0], se[1]) {
							held++
							c[0]++
						}
						byFigure[n] = c
						if d <= z*math.Hypot(seOrder[0], seOrder[1]) {
							heldOrder++
						}
						sq += d * d / (se[0]*se[0] + se[1]*se[1])
						sqOrder += d * d / (seOrder[0]*seOrder[0] + seOrder[1]*seOrder[1])
					}
				}
			}
			rate, rateOrder := float64(held)/float64(checked), float64(heldOrder)/float64(checked)
			sq, sqOrder = sq/float64(checked), sqOrder/float64(checked)
			t.Logf("%d figures: the halves agree within their own error %.1f%% of the time, mean (difference/se)² %.2f (order-statistic interval alone %.1f%%, %.2f)", checked, 100*rate, sq, 100*rateOrder, sqOrder)
			for _, n := range Percentiles() {
				c := byFigure[n]
				t.Logf("  %s: %d of %d", n, c[0], c[1])
			}
			if checked < 50 {
				t.Errorf("only %d figures checked", checked)
			}
			if rate < guard {
				t.Errorf("own error holds on %.1f%% of the figures, below %.0f%%", 100*rate, 100*guard)
			}
			if sq > maxSqErr {
				t.Errorf("mean (difference/se)² %.2f, above %.1f: the own error is too small", sq, maxSqErr)
			}
			if sqOrder <= maxSqErr {
				t.Errorf("the order-statistic interval alone gives a mean (difference/se)² of %.2f, within %.1f: the check cannot tell it from the run's own error", sqOrder, maxSqErr)
			}
		})
	}
}

// secs is s seconds as a duration.
func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
