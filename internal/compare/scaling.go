package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// ScalingPoint is one run: its load level (VUs or arrival rate) and its
// throughput.
type ScalingPoint struct {
	Source     string  `json:"source"`
	Level      float64 `json:"level"`
	Throughput float64 `json:"throughput"` // req/s
}

// ScalingLevel is the runs at one load level: their mean throughput, the
// throughput per unit of load (per VU, or per req/s of arrival rate) and
// its efficiency against the lowest level's.
type ScalingLevel struct {
	Level      float64 `json:"level"`
	Runs       int     `json:"runs"`
	Throughput float64 `json:"throughput"` // mean req/s
	PerUnit    float64 `json:"per_unit"`   // Throughput / Level
	// Efficiency is PerUnit against the lowest level's PerUnit: 1 where
	// throughput grew in proportion to the load from the lowest level.
	Efficiency float64 `json:"efficiency"`
}

// Scaling is what runs at several load levels say about scaling: the
// linear part (throughput per unit of load at each level) always, and a
// USL fit where the levels identify its parameters.
type Scaling struct {
	Unit   string         `json:"unit"` // "VUs" or "rps"
	Points []ScalingPoint `json:"points"`
	Levels []ScalingLevel `json:"levels"`
	// Fit is the USL fit; nil below stats.USLParams distinct levels,
	// which cannot identify its three parameters.
	Fit *stats.USL `json:"fit,omitempty"`
	// Peak is the level of maximum throughput (+Inf: none),
	// MaxThroughput the throughput there; both NaN without a fit, and
	// reported as null in JSON when not finite.
	Peak          float64 `json:"-"`
	MaxThroughput float64 `json:"-"`
	// Efficiency is the threshold of LinearLimit: the level where the
	// fitted X(N)/(λN) falls below it is where throughput stopped
	// scaling linearly (NaN without a fit).
	Efficiency  float64 `json:"efficiency"`
	LinearLimit float64 `json:"-"`
	// Suggested are further load levels that would leave a USL fit
	// degrees of freedom to be checked with; empty when it has some.
	Suggested []float64 `json:"suggested_levels,omitempty"`
	Sentences []string  `json:"sentences"`
	Warnings  []string  `json:"warnings,omitempty"`
}

// PointFromRun reads a run's level (peak VUs) and throughput. level > 0
// overrides the level (e.g. an arrival rate).
func PointFromRun(r figures.Run, level float64) (ScalingPoint, error) {
	p := ScalingPoint{Source: r.Source, Level: level, Throughput: r.RPS}
	if p.Level <= 0 {
		p.Level = float64(r.Workload.VUs)
	}
	if p.Level <= 0 {
		return p, fmt.Errorf("%s: no vus_max or vus metric tells the run's concurrency; give the levels with --levels", r.Source)
	}
	return p, nil
}

// checkedLevels is the number of distinct load levels a USL fit needs to
// have one degree of freedom left: its parameters and one more.
const checkedLevels = stats.USLParams + 1

// Scale judges scaling from runs at several load levels. Every run's
// throughput per unit of load is reported by level. With at least
// stats.USLParams (3) distinct levels it fits the USL and derives the
// peak, the Amdahl ceiling and the level beyond which throughput stopped
// scaling linearly (fitted efficiency below efficiency, 0.8 when 0); R²
// and the limit beyond the levels measured are stated only with a
// fourth level, which leaves the fit something to be checked with. With
// two levels it fits no USL and says which levels would identify it;
// with one, scaling cannot be judged (an error).
func Scale(points []ScalingPoint, unit string, efficiency float64) (*Scaling, error) {
	if efficiency <= 0 || efficiency >= 1 {
		efficiency = 0.8
	}
	if unit == "" {
		unit = "VUs"
	}
	if len(points) == 0 {
		return nil, errors.New("scaling: no runs")
	}
	pts := append([]ScalingPoint(nil), points...)
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].Level < pts[j].Level })
	levels := scalingLevels(pts)
	suggested := suggestLevels(levels, unit, checkedLevels-len(levels))
	if len(levels) < 2 {
		return nil, fmt.Errorf("all %d runs share one concurrency level (%s): scaling cannot be judged from one level; run the test at %d more levels, e.g. %s",
			len(pts), levelText(levels[0].Level, unit), checkedLevels-1, joinLevels(suggested, unit))
	}
	s := &Scaling{Unit: unit, Points: pts, Levels: levels, Efficiency: efficiency, Suggested: suggested,
		Peak: math.NaN(), MaxThroughput: math.NaN(), LinearLimit: math.NaN()}
	if len(levels) < stats.USLParams {
		s.linearSentences()
		return s, nil
	}
	n := make([]float64, len(pts))
	x := make([]float64, len(pts))
	for i, p := range pts {
		n[i], x[i] = p.Level, p.Throughput
	}
	fit, err := stats.FitUSL(n, x)
	if err != nil {
		return nil, fmt.Errorf("scaling fit: %w", err)
	}
	s.Fit = &fit
	s.Peak, s.MaxThroughput, s.LinearLimit = fit.Peak(), fit.MaxThroughput(), fit.LinearLimit(efficiency)
	if len(levels) < 6 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d load levels: the USL fit is fragile below 6; add levels, some past the peak", len(levels)))
	}
	maxLevel := pts[len(pts)-1].Level
	if !math.IsInf(s.Peak, 1) && s.Peak > 2*maxLevel {
		s.Warnings = append(s.Warnings, fmt.Sprintf("the fitted peak (%.0f %s) lies far beyond the highest level measured (%.0f): an extrapolation", s.Peak, unit, maxLevel))
	}
	s.sentences(maxLevel)
	return s, nil
}

// scalingLevels groups sorted points by level.
func scalingLevels(pts []ScalingPoint) []ScalingLevel {
	var out []ScalingLevel
	for _, p := range pts {
		if len(out) == 0 || out[len(out)-1].Level != p.Level {
			out = append(out, ScalingLevel{Level: p.Level})
		}
		l := &out[len(out)-1]
		l.Runs++
		l.Throughput += p.Throughput
	}
	for i := range out {
		l := &out[i]
		l.Throughput /= float64(l.Runs)
		l.PerUnit = l.Throughput / l.Level
		l.Efficiency = l.PerUnit / out[0].PerUnit
	}
	return out
}

// suggestLevels proposes k load levels not yet measured: half the lowest
// level, the midpoints of the widest gaps between measured levels, then
// 1.5 and 2 times the highest (past a peak, where the coherency cost
// shows). VUs are whole; the result is sorted.
func suggestLevels(levels []ScalingLevel, unit string, k int) []float64 {
	if k <= 0 {
		return nil
	}
	round := func(v float64) float64 {
		if unit == "VUs" {
			return math.Round(v)
		}
		f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64) // a formatted float parses
		return f
	}
	lo, hi := levels[0].Level, levels[len(levels)-1].Level
	cands := []float64{lo / 2}
	gaps := make([][2]float64, 0, len(levels))
	for i := 1; i < len(levels); i++ {
		gaps = append(gaps, [2]float64{levels[i-1].Level, levels[i].Level})
	}
	sort.SliceStable(gaps, func(i, j int) bool { return gaps[i][1]-gaps[i][0] > gaps[j][1]-gaps[j][0] })
	for _, g := range gaps {
		cands = append(cands, (g[0]+g[1])/2)
	}
	cands = append(cands, 1.5*hi, 2*hi, 3*hi)
	taken := map[float64]bool{}
	for _, l := range levels {
		taken[l.Level] = true
	}
	var out []float64
	for _, c := range cands {
		c = round(c)
		if len(out) == k {
			break
		}
		if c <= 0 || (unit == "VUs" && c < 1) || taken[c] {
			continue
		}
		taken[c] = true
		out = append(out, c)
	}
	sort.Float64s(out)
	return out
}

// unitOne is the unit of one level: "VU" for VUs.
func unitOne(unit string) string {
	if unit == "VUs" {
		return "VU"
	}
	return unit
}

func levelText(v float64, unit string) string { return fmt.Sprintf("%.4g %s", v, unit) }

// joinLevels writes levels as "25 and 75 VUs" or "5, 25 and 75 VUs".
func joinLevels(v []float64, unit string) string {
	parts := make([]string, len(v))
	for i, l := range v {
		parts[i] = fmt.Sprintf("%.4g", l)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "") + " " + unit
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1] + " " + unit
}

// linearSentences says what two load levels can show: the throughput
// per unit of load at each and the efficiency of the higher against the
// lower; and why no USL is fitted.
func (s *Scaling) linearSentences() {
	lo, hi := s.Levels[0], s.Levels[len(s.Levels)-1]
	one := unitOne(s.Unit)
	s.Sentences = append(s.Sentences,
		fmt.Sprintf("%d runs at 2 load levels (%s and %s): the USL's %d parameters (σ, κ, λ) are not identified by two levels, so no USL is fitted and no peak or limit is given.",
			len(s.Points), fmt.Sprintf("%.4g", lo.Level), levelText(hi.Level, s.Unit), stats.USLParams),
		fmt.Sprintf("Linear part: %.4g req/s per %s at %s (%s), %.4g req/s per %s at %s (%s); at %s each %s gave %.1f%% of its throughput at %s (throughput ×%.3g for ×%.3g the load).",
			lo.PerUnit, one, levelText(lo.Level, s.Unit), runsText(lo.Runs), hi.PerUnit, one, levelText(hi.Level, s.Unit), runsText(hi.Runs),
			levelText(hi.Level, s.Unit), one, 100*hi.Efficiency, levelText(lo.Level, s.Unit), hi.Throughput/lo.Throughput, hi.Level/lo.Level),
		fmt.Sprintf("To fit the USL with a check of the fit, run at least %d more load levels, e.g. %s.", len(s.Suggested), joinLevels(s.Suggested, s.Unit)))
}

func runsText(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("mean of %d runs", n)
}

func (s *Scaling) sentences(maxLevel float64) {
	f := s.Fit
	if f.DegreesOfFreedom() > 0 {
		s.Sentences = append(s.Sentences, fmt.Sprintf("USL fit over %d runs at %d load levels: σ (contention) = %.4g, κ (coherency) = %.4g, λ = %.4g req/s per %s, R² = %.4f.",
			f.Points, f.Levels, f.Sigma, f.Kappa, f.Lambda, unitOne(s.Unit), f.R2))
	} else {
		s.Sentences = append(s.Sentences,
			fmt.Sprintf("USL fit over %d runs at %d load levels: σ (contention) = %.4g, κ (coherency) = %.4g, λ = %.4g req/s per %s.",
				f.Points, f.Levels, f.Sigma, f.Kappa, f.Lambda, unitOne(s.Unit)),
			fmt.Sprintf("%d levels for %d parameters leave the fit no degrees of freedom: the curve can follow any %d levels' throughputs, so how closely it does says nothing, no R² is given and nothing checks the figures below; run at least %d more load level, e.g. %s.",
				f.Levels, stats.USLParams, f.Levels, len(s.Suggested), joinLevels(s.Suggested, s.Unit)))
	}
	switch {
	case s.LinearLimit <= maxLevel:
		s.Sentences = append(s.Sentences, fmt.Sprintf("Throughput stopped scaling linearly beyond %.0f %s (fitted efficiency below %.0f%%).",
			math.Floor(s.LinearLimit), s.Unit, 100*s.Efficiency))
	case f.DegreesOfFreedom() > 0:
		s.Sentences = append(s.Sentences, fmt.Sprintf("Throughput scaled near-linearly (fitted efficiency at or above %.0f%%) up to the highest level measured, %.0f %s; the model puts the limit at %.0f %s.",
			100*s.Efficiency, maxLevel, s.Unit, s.LinearLimit, s.Unit))
	default:
		s.Sentences = append(s.Sentences, fmt.Sprintf("Throughput scaled near-linearly (fitted efficiency at or above %.0f%%) up to the highest level measured, %.0f %s.",
			100*s.Efficiency, maxLevel, s.Unit))
	}
	switch {
	case math.IsInf(s.Peak, 1) && f.Sigma == 0:
		s.Sentences = append(s.Sentences, "No contention or coherency cost was measured: throughput scales linearly over the range.")
	case math.IsInf(s.Peak, 1):
		s.Sentences = append(s.Sentences, fmt.Sprintf("No retrograde scaling (κ = 0): throughput approaches the Amdahl ceiling of %.4g req/s.", s.MaxThroughput))
	default:
		s.Sentences = append(s.Sentences, fmt.Sprintf("Throughput peaks at about %.0f %s with %.4g req/s and falls beyond (κ > 0).",
			math.Floor(s.Peak), s.Unit, s.MaxThroughput))
	}
}

func jsonNum(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// uslJSON is a fit as written: without r2 where the fit has no degrees
// of freedom left, as R² measures nothing there.
type uslJSON struct {
	stats.USL
	R2 *float64 `json:"r2,omitempty"`
}

// WriteJSON writes the levels and the fit; a peak or limit that is
// infinite or absent (no fit) is null.
func (s *Scaling) WriteJSON(w io.Writer) error {
	var fit *uslJSON
	if s.Fit != nil {
		fit = &uslJSON{USL: *s.Fit}
		if s.Fit.DegreesOfFreedom() > 0 {
			fit.R2 = &s.Fit.R2
		}
	}
	out := struct {
		*Scaling
		Fit           *uslJSON `json:"fit,omitempty"`
		Peak          *float64 `json:"peak"`
		MaxThroughput *float64 `json:"max_throughput"`
		LinearLimit   *float64 `json:"linear_limit"`
	}{s, fit, jsonNum(s.Peak), jsonNum(s.MaxThroughput), jsonNum(s.LinearLimit)}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteText writes the sentences and the points: with the fitted values
// and the fitted efficiency, or without a fit the throughput per unit of
// load and its efficiency against the lowest level's.
func (s *Scaling) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, l := range s.Sentences {
		b.WriteString(l + "\n")
	}
	if s.Fit != nil {
		fmt.Fprintf(&b, "\n%-10s %12s %12s %10s  %s\n", strings.ToUpper(s.Unit), "MEASURED", "FITTED", "EFFIC.", "RUN")
		for _, p := range s.Points {
			fx := s.Fit.Throughput(p.Level)
			fmt.Fprintf(&b, "%-10.4g %12.2f %12.2f %9.1f%%  %s\n", p.Level, p.Throughput, fx, 100*fx/(s.Fit.Lambda*p.Level), p.Source)
		}
	} else {
		base := s.Levels[0].PerUnit
		fmt.Fprintf(&b, "\n%-10s %12s %12s %10s  %s\n", strings.ToUpper(s.Unit), "MEASURED", "PER "+strings.ToUpper(unitOne(s.Unit)), "EFFIC.", "RUN")
		for _, p := range s.Points {
			fmt.Fprintf(&b, "%-10.4g %12.2f %12.4g %9.1f%%  %s\n", p.Level, p.Throughput, p.Throughput/p.Level, 100*p.Throughput/p.Level/base, p.Source)
		}
	}
	for _, wn := range s.Warnings {
		b.WriteString("warning: " + wn + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
