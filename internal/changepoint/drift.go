package changepoint

import (
	"fmt"
	"math"
	"slices"

	"github.com/envelope-dev/envelope/internal/stats"
)

// MaxDriftRuns bounds the runs a drift estimate reads (the latest ones
// since the given run): Theil-Sen takes every pair, so its cost grows
// with the square of the runs.
const MaxDriftRuns = 1000

// Drift is how far a series moved since a given run, step or no step:
// the Theil-Sen slope over the runs since (outlier runs left out),
// accumulated to the last run.
type Drift struct {
	Key
	Since RunRef `json:"since"`
	// Runs is the number of runs the slope rests on.
	Runs int `json:"runs"`
	// PerRun is the relative change per run along the fitted line.
	PerRun float64 `json:"per_run"`
	// Change is the relative change from the Since run to the last run
	// along the fitted line, CI its interval at Config.Confidence
	// (Sen's interval of the slope).
	Change float64    `json:"change"`
	CI     [2]float64 `json:"ci"`
	// Level is the fitted line's value at the Since run, in the figure's
	// unit (the median intercept of the slope): the line runs from there
	// by PerRun a run.
	Level     float64   `json:"level"`
	Direction Direction `json:"direction"`
	// OverTolerance: the accumulated change passes the tolerance and its
	// interval excludes no change.
	OverTolerance bool `json:"over_tolerance"`
}

// Drift estimates series k's drift from run since (1-based index in the
// line, see Run.Index) to its last run against a tolerance (a relative
// change, e.g. the envelope's 0.10 latency rise).
func (a *Analyzer) Drift(k Key, sinceIndex int, tolerance float64) (Drift, error) {
	s, ok := a.series[k]
	if !ok {
		return Drift{}, fmt.Errorf("no series %s", k)
	}
	if s.off > 0 {
		return Drift{}, fmt.Errorf("drift of %s: the runs before run %d were left out of the checkpoint: %w", k, s.off+1, ErrCheckpoint)
	}
	n := len(s.runs)
	// since is the 1-based place in the series of the first run at or
	// after sinceIndex.
	since := 0
	for i := range n {
		if s.ref(i).Index >= sinceIndex {
			since = i + 1
			break
		}
	}
	if sinceIndex < 1 || since == 0 {
		return Drift{}, fmt.Errorf("%s: run %d is outside its %d runs", k, sinceIndex, n)
	}
	if !(tolerance >= 0) {
		return Drift{}, fmt.Errorf("tolerance %v: want a relative change ≥ 0", tolerance)
	}
	s.refresh()
	// The kept runs since, placed by their index in the line.
	var xs, ys []float64
	for i := since - 1; i < n; i++ {
		if s.z[i] == 0 {
			xs, ys = append(xs, float64(s.ref(i).Index)), append(ys, s.y[i])
		}
	}
	if len(xs) > MaxDriftRuns {
		xs, ys = xs[len(xs)-MaxDriftRuns:], ys[len(ys)-MaxDriftRuns:]
	}
	if len(xs) < 3 {
		return Drift{}, fmt.Errorf("%s: %d runs since run %d, a drift needs at least 3", k, len(xs), sinceIndex)
	}
	slope, lo, hi := theilSen(xs, ys, s.cfg.Confidence)
	x0 := float64(s.ref(since - 1).Index)
	span := float64(s.ref(n-1).Index) - x0
	d := Drift{Key: k, Since: s.ref(since - 1), Runs: len(xs)}
	rel := func(b float64) float64 { return math.Expm1(b * span) }
	d.PerRun = math.Expm1(slope)
	// The level at the since run along the line: the median intercept.
	icpt := make([]float64, len(xs))
	for j := range xs {
		icpt[j] = ys[j] - slope*xs[j]
	}
	base := median(icpt) + slope*x0 + s.y0
	d.Level = s.level(base - s.y0)
	if s.linear {
		if !(base > 0) {
			return Drift{}, fmt.Errorf("%s: level %v at run %d: a relative drift needs a level above 0", k, base, sinceIndex)
		}
		rel = func(b float64) float64 { return b * span / base }
		d.PerRun = slope / base
	}
	d.Change, d.CI = rel(slope), [2]float64{rel(lo), rel(hi)}
	if d.CI[0] > d.CI[1] {
		d.CI[0], d.CI[1] = d.CI[1], d.CI[0]
	}
	d.Direction = direction(s.pol, d.Change > 0)
	d.OverTolerance = math.Abs(d.Change) > tolerance && (d.CI[0] > 0 || d.CI[1] < 0)
	return d, nil
}

// theilSen is the median of the slopes of every pair of points and
// Sen's distribution-free interval of it: the order statistics of the
// sorted slopes at (N ∓ z·√(n(n−1)(2n+5)/18))/2, N the number of pairs.
func theilSen(x, y []float64, confidence float64) (slope, lo, hi float64) {
	n := len(x)
	sl := make([]float64, 0, n*(n-1)/2)
	for a := range n {
		for b := a + 1; b < n; b++ {
			sl = append(sl, (y[b]-y[a])/(x[b]-x[a]))
		}
	}
	slices.Sort(sl)
	slope = median(sl)
	nf := float64(n)
	c := stats.NormalQuantile(1-(1-confidence)/2) * math.Sqrt(nf*(nf-1)*(2*nf+5)/18)
	N := float64(len(sl))
	l := int(math.Floor((N - c) / 2))
	u := int(math.Ceil((N + c) / 2))
	l = min(max(l, 1), len(sl))
	u = min(max(u, 1), len(sl))
	return slope, sl[l-1], sl[u-1]
}
