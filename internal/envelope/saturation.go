package envelope

import (
	"fmt"
	"slices"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// saturation judges whether the runs were below saturation by the three
// signs the baseline method names: throughput degradation, latency inflation and
// error emergence. It says "below saturation" only when none is seen and
// there were enough runs to see them, and gives the figures either way.
func saturation(env *Envelope, in []Input) Saturation {
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
	if d, ok := orderedDrop(in); ok && d > SaturationMaxDrift {
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
	for _, r := range in {
		dr, dl, ok := halves(r.Run)
		if !ok {
			continue
		}
		drift = true
		if dr < -SaturationMaxDrift {
			signs = append(signs, fmt.Sprintf("throughput degradation within %s: the second half ran %.1f%% below the first", r.Source.File, -100*dr))
		}
		if dl > SaturationMaxDrift {
			signs = append(signs, fmt.Sprintf("latency inflation within %s: p95 of the second half is %.1f%% above the first", r.Source.File, 100*dl))
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
	var dropped float64
	for _, r := range in {
		if m := r.Run.Metrics["dropped_iterations"]; m != nil {
			dropped += m.Values["count"]
		}
	}
	if dropped > 0 {
		signs = append(signs, fmt.Sprintf("dropped iterations: k6 could not start %.0f iterations (the arrival rate outran the VUs)", dropped))
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
func orderedDrop(in []Input) (float64, bool) {
	if len(in) < 2 {
		return 0, false
	}
	rs := slices.Clone(in)
	for _, r := range rs {
		if r.Run.Start.IsZero() {
			return 0, false
		}
	}
	slices.SortFunc(rs, func(a, b Input) int { return a.Run.Start.Compare(b.Run.Start) })
	first := rs[0].Run.Metrics["http_reqs"]
	last := rs[len(rs)-1].Run.Metrics["http_reqs"]
	if first == nil || last == nil || first.Values["rate"] <= 0 {
		return 0, false
	}
	return (first.Values["rate"] - last.Values["rate"]) / first.Values["rate"], true
}

// halves compares the second half of a run's points with the first:
// relative change of the request rate and of the p95 of http_req_duration.
func halves(r *k6.Run) (rate, p95 float64, ok bool) {
	var start, end time.Time
	for _, p := range r.Points {
		if p.Metric != "http_reqs" && p.Metric != k6.HTTPReqDuration {
			continue
		}
		if start.IsZero() || p.Time.Before(start) {
			start = p.Time
		}
		if p.Time.After(end) {
			end = p.Time
		}
	}
	if start.IsZero() || end.Sub(start) < 20*time.Second {
		return 0, 0, false
	}
	mid := start.Add(end.Sub(start) / 2)
	var n [2]float64
	var lat [2][]float64
	for _, p := range r.Points {
		h := 0
		if !p.Time.Before(mid) {
			h = 1
		}
		switch p.Metric {
		case "http_reqs":
			n[h] += p.Value
		case k6.HTTPReqDuration:
			lat[h] = append(lat[h], p.Value)
		}
	}
	if n[0] == 0 || len(lat[0]) < 20 || len(lat[1]) < 20 {
		return 0, 0, false
	}
	a, b := stats.Quantile(slices.Sorted(slices.Values(lat[0])), 0.95), stats.Quantile(slices.Sorted(slices.Values(lat[1])), 0.95)
	if a == 0 {
		return 0, 0, false
	}
	return (n[1] - n[0]) / n[0], (b - a) / a, true
}
