package compare

import (
	"math"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// PlanMinRuns and PlanMaxRuns bound the baseline sizes a RunsPlan
// looks at: 3 is the fewest runs a baseline should have.
const (
	PlanMinRuns = 3
	PlanMaxRuns = 30
)

// planRuns are the baseline sizes a RunsPlan tabulates (its Rows, by N).
var planRuns = [...]int{3, 5, 10, 20}

// RunsPlan is how the uncertainty of one aggregate latency figure's
// baseline level shrinks with the number of baseline runs, from the
// spread the envelope's runs showed: what a tight envelope needs.
type RunsPlan struct {
	Figure figures.Name // median, p95 or p99
	Runs   int          // baseline runs the spread is estimated from
	// SD is the standard deviation of a run's ln value (the between-run
	// spread, a run's sampling included); RunLevelSD is the part beyond
	// the runs' mean sampling error, √max(0, s² − v̄), v̄ over the runs
	// whose own interval the envelope holds (NaN when none does).
	SD, RunLevelSD float64
	// Missing are the indexes, in the envelope's runs, of the runs with
	// the figure but without its interval.
	Missing []int
	// Rows: per baseline size n, the half-width of the interval of the
	// baseline's level (ratio − 1) and the minimum detectable change of
	// compare with CandRuns later runs (80% power).
	Rows     []PlanRow
	CandRuns int
	// Tolerance is the latency rise; Needed the fewest baseline runs
	// (PlanMinRuns to PlanMaxRuns) whose MDC with CandRuns later runs is within it,
	// 0 when none is.
	Tolerance float64
	Needed    int
}

// PlanRow is one baseline size of a RunsPlan.
type PlanRow struct {
	N              int
	LevelHalfWidth float64
	MDC            float64
}

// LatencyPlans are the runs plans of the aggregate median, p95 and p99
// for candRuns later runs, at the envelope's confidence and latency
// tolerance (10% when unset). A figure with fewer than 2 runs is left out.
func LatencyPlans(env *envelope.Envelope, candRuns int) []RunsPlan {
	conf := figures.Confidence(env.Tolerance.Confidence)
	tol := env.Tolerance.Latency()
	var out []RunsPlan
	for _, n := range figures.Percentiles() {
		runs := env.RunFigures()
		k := figures.Key{Figure: n}
		base, _ := figures.Baseline(runs, k)
		if len(base) < 2 {
			continue
		}
		var missing []int
		for i := range runs {
			if v, ok := runs[i].Value(k); ok && v.X > 0 && math.IsNaN(v.LogVar(n)) {
				missing = append(missing, i)
			}
		}
		logs := make([]float64, len(base))
		var vsum float64
		known := 0
		for i, b := range base {
			logs[i] = math.Log(b.X)
			if !math.IsNaN(b.LogVar) {
				vsum += b.LogVar
				known++
			}
		}
		_, s2 := stats.MeanVar(logs)
		p := RunsPlan{Figure: n, Runs: len(logs), SD: math.Sqrt(s2), RunLevelSD: math.NaN(), Missing: missing, CandRuns: candRuns, Tolerance: tol}
		if known > 0 {
			// The runs that keep an interval give the typical sampling
			// error, as compare's run-level model takes it.
			p.RunLevelSD = math.Sqrt(math.Max(0, s2-vsum/float64(known)))
		}
		for n := PlanMinRuns; n <= PlanMaxRuns; n++ {
			row := planRow(p.SD, n, candRuns, conf)
			if p.Needed == 0 && row.MDC <= tol {
				p.Needed = n
			}
			for _, want := range planRuns {
				if n == want {
					p.Rows = append(p.Rows, row)
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// planRow projects a baseline of n runs whose ln values spread by sd:
// the interval of its mean level (t on n − 1 df) and compare's MDC with
// m later runs of the same spread (t on n + m − 2 df, as compare takes).
func planRow(sd float64, n, m int, conf float64) PlanRow {
	q := 1 - (1-conf)/2
	half := math.Expm1(stats.TQuantile(q, float64(n-1)) * sd / math.Sqrt(float64(n)))
	df := float64(n + m - 2)
	se := sd * math.Sqrt(1/float64(n)+1/float64(m))
	return PlanRow{N: n, LevelHalfWidth: half, MDC: math.Expm1((stats.TQuantile(q, df) + stats.TQuantile(0.8, df)) * se)}
}
