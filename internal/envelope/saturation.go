package envelope

import (
	"fmt"
	"slices"

	"github.com/envelope-dev/envelope/internal/figures"
)

// saturation judges whether the runs were below saturation by four signs:
// throughput degradation, latency inflation, error emergence and dropped
// iterations (an arrival rate the VUs could not keep). It says "below
// saturation" only when none is seen and there were enough runs to see
// them, and gives the figures either way.
func saturation(env *Envelope, runs []figures.Run) Saturation {
	var signs, clear []string
	n := len(env.Runs)

	// Throughput degradation: spread across runs, then runs in time order.
	if t := env.Throughput; t.N >= 2 {
		if t.CV > SaturationMaxCV {
			signs = append(signs, fmt.Sprintf("throughput degradation: throughput varies %.2f%% (CV) across %d runs, above %.0f%%", 100*t.CV, n, 100*SaturationMaxCV))
		} else {
			clear = append(clear, fmt.Sprintf("no throughput degradation: throughput CV %.2f%% across %d runs (limit %.0f%%), %.2f–%.2f req/s", 100*t.CV, n, 100*SaturationMaxCV, t.Min, t.Max))
		}
	}
	if d, ok := orderedDrop(runs); ok && d > SaturationMaxDrift {
		signs = append(signs, fmt.Sprintf("throughput degradation: the last run (by start time) is %.1f%% below the first", 100*d))
	}

	// Latency inflation: band width against its level.
	l := env.Latency
	if l.P95.N >= 2 && l.P95.Min > 0 {
		w95 := (l.P95.Max - l.P95.Min) / l.P95.Min
		w99 := 0.0
		if l.P99.N >= 2 && l.P99.Min > 0 {
			w99 = (l.P99.Max - l.P99.Min) / l.P99.Min
		}
		if w95 > SaturationMaxBandWidth || w99 > SaturationMaxBandWidth {
			signs = append(signs, fmt.Sprintf("latency inflation: the p95 band spans %.1f%% and the p99 band %.1f%% of their lower ends, above %.0f%%", 100*w95, 100*w99, 100*SaturationMaxBandWidth))
		} else {
			clear = append(clear, fmt.Sprintf("no broad latency inflation: the p95 band spans %.1f%% and the p99 band %.1f%% of their lower ends (limit %.0f%%)", 100*w95, 100*w99, 100*SaturationMaxBandWidth))
		}
	}

	// Within runs, when the points are there: later half against earlier.
	drift := false
	for _, r := range runs {
		h := r.Halves
		if h == nil {
			continue
		}
		drift = true
		dr := float64(h.Requests[1]-h.Requests[0]) / float64(h.Requests[0])
		dl := (h.P95[1] - h.P95[0]) / h.P95[0]
		if dr < -SaturationMaxDrift {
			signs = append(signs, fmt.Sprintf("throughput degradation within %s: the second half ran %.1f%% below the first", r.Source, -100*dr))
		}
		if dl > SaturationMaxDrift {
			signs = append(signs, fmt.Sprintf("latency inflation within %s: p95 of the second half is %.1f%% above the first", r.Source, 100*dl))
		}
	}
	if drift && len(signs) == 0 {
		clear = append(clear, fmt.Sprintf("no drift within runs: throughput and p95 of each run's second half stay within %.0f%% of the first", 100*SaturationMaxDrift))
	}

	// Error emergence.
	if e := env.Errors; e.Failed > 0 {
		signs = append(signs, fmt.Sprintf("error emergence: %d of %d requests failed (%.3f%%)", e.Failed, e.Total, 100*e.Rate))
	} else {
		clear = append(clear, fmt.Sprintf("no error emergence: 0 of %d requests failed in %d runs", e.Total, n))
	}
	var dropped int64
	for _, r := range runs {
		dropped += r.DroppedIterations
	}
	if dropped > 0 {
		signs = append(signs, fmt.Sprintf("dropped iterations: k6 could not start %d iterations (the arrival rate outran the VUs)", dropped))
	}

	switch {
	case len(signs) > 0:
		return Saturation{Verdict: "signs of saturation", Reasons: signs}
	case n < 2 && !drift:
		return Saturation{Verdict: "inconclusive", Reasons: append([]string{"a single run shows no run-to-run degradation or inflation either way"}, clear...)}
	default:
		return Saturation{BelowSaturation: true, Verdict: "below saturation", Reasons: clear}
	}
}

// orderedDrop is the relative throughput drop from the first to the last
// run in start-time order, when every run's start is known.
func orderedDrop(runs []figures.Run) (float64, bool) {
	if len(runs) < 2 {
		return 0, false
	}
	rs := slices.Clone(runs)
	for _, r := range rs {
		if r.Provenance.Start.IsZero() {
			return 0, false
		}
	}
	slices.SortFunc(rs, func(a, b figures.Run) int { return a.Provenance.Start.Compare(b.Provenance.Start) })
	first, last := rs[0].RPS, rs[len(rs)-1].RPS
	if first <= 0 {
		return 0, false
	}
	return (first - last) / first, true
}
