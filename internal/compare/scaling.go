package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
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

// Scaling is a USL fit over runs at several load levels.
type Scaling struct {
	Unit   string         `json:"unit"` // "VUs" or "rps"
	Points []ScalingPoint `json:"points"`
	Fit    stats.USL      `json:"fit"`
	// Peak is the level of maximum throughput (+Inf: none, reported as
	// null in JSON), MaxThroughput the throughput there.
	Peak          float64 `json:"-"`
	MaxThroughput float64 `json:"-"`
	// Efficiency is the threshold of LinearLimit: the level where the
	// fitted X(N)/(λN) falls below it is where throughput stopped
	// scaling linearly.
	Efficiency  float64  `json:"efficiency"`
	LinearLimit float64  `json:"-"`
	Sentences   []string `json:"sentences"`
	Warnings    []string `json:"warnings,omitempty"`
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

// Scale fits the USL to points and derives the peak, the Amdahl ceiling
// and the level beyond which throughput stopped scaling linearly
// (fitted efficiency below efficiency, 0.8 when 0).
func Scale(points []ScalingPoint, unit string, efficiency float64) (*Scaling, error) {
	if efficiency <= 0 || efficiency >= 1 {
		efficiency = 0.8
	}
	if unit == "" {
		unit = "VUs"
	}
	pts := append([]ScalingPoint(nil), points...)
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].Level < pts[j].Level })
	n := make([]float64, len(pts))
	x := make([]float64, len(pts))
	for i, p := range pts {
		n[i], x[i] = p.Level, p.Throughput
	}
	fit, err := stats.FitUSL(n, x)
	if err != nil {
		return nil, fmt.Errorf("scaling fit: %w", err)
	}
	s := &Scaling{Unit: unit, Points: pts, Fit: fit, Efficiency: efficiency,
		Peak: fit.Peak(), MaxThroughput: fit.MaxThroughput(), LinearLimit: fit.LinearLimit(efficiency)}
	if len(pts) < 6 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d points: the USL fit is fragile below 6; add levels, some past the peak", len(pts)))
	}
	maxLevel := pts[len(pts)-1].Level
	if !math.IsInf(s.Peak, 1) && s.Peak > 2*maxLevel {
		s.Warnings = append(s.Warnings, fmt.Sprintf("the fitted peak (%.0f %s) lies far beyond the highest level measured (%.0f): an extrapolation", s.Peak, unit, maxLevel))
	}
	s.sentences(maxLevel)
	return s, nil
}

func (s *Scaling) sentences(maxLevel float64) {
	f := s.Fit
	s.Sentences = append(s.Sentences, fmt.Sprintf("USL fit over %d runs: σ (contention) = %.4g, κ (coherency) = %.4g, λ = %.4g req/s per %s, R² = %.4f.",
		f.Points, f.Sigma, f.Kappa, f.Lambda, strings.TrimSuffix(s.Unit, "s"), f.R2))
	if s.LinearLimit <= maxLevel {
		s.Sentences = append(s.Sentences, fmt.Sprintf("Throughput stopped scaling linearly beyond %.0f %s (fitted efficiency below %.0f%%).",
			math.Floor(s.LinearLimit), s.Unit, 100*s.Efficiency))
	} else {
		s.Sentences = append(s.Sentences, fmt.Sprintf("Throughput scaled near-linearly (fitted efficiency at or above %.0f%%) up to the highest level measured, %.0f %s; the model puts the limit at %.0f %s.",
			100*s.Efficiency, maxLevel, s.Unit, s.LinearLimit, s.Unit))
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

// WriteJSON writes the fit; an infinite peak or limit is null.
func (s *Scaling) WriteJSON(w io.Writer) error {
	out := struct {
		*Scaling
		Peak          *float64 `json:"peak"`
		MaxThroughput *float64 `json:"max_throughput"`
		LinearLimit   *float64 `json:"linear_limit"`
	}{s, jsonNum(s.Peak), jsonNum(s.MaxThroughput), jsonNum(s.LinearLimit)}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteText writes the sentences and the points with the fitted values.
func (s *Scaling) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, l := range s.Sentences {
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "\n%-10s %12s %12s %10s  %s\n", strings.ToUpper(s.Unit), "MEASURED", "FITTED", "EFFIC.", "RUN")
	for _, p := range s.Points {
		fx := s.Fit.Throughput(p.Level)
		fmt.Fprintf(&b, "%-10.4g %12.2f %12.2f %9.1f%%  %s\n", p.Level, p.Throughput, fx, 100*fx/(s.Fit.Lambda*p.Level), p.Source)
	}
	for _, wn := range s.Warnings {
		b.WriteString("warning: " + wn + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
