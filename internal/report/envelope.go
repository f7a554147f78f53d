package report

import (
	"bytes"
	"fmt"
	"github.com/envelope-dev/envelope/internal/compare"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// WriteEnvelopeReport writes the envelope's Markdown report to mdPath and
// its charts, in light and dark variants, to charts/light and charts/dark
// beside it. The sections follow the baseline document (Method;
// Throughput; Iteration rate; Latency; Error rate; Endpoint bands;
// Aggregate tail behaviour; Steady-state operating point; Saturation) and
// restate its figures with its rounding (see envFig).
func WriteEnvelopeReport(env *envelope.Envelope, mdPath string) error {
	if env == nil {
		return fmt.Errorf("envelope report: no envelope")
	}
	if env.Throughput.N == 0 || len(env.Runs) == 0 {
		return fmt.Errorf("envelope report: field throughput.n: the envelope holds no runs")
	}
	dir := filepath.Join(filepath.Dir(mdPath), "charts")
	pics, err := envCharts(env, dir)
	if err != nil {
		return fmt.Errorf("envelope report charts: %w", err)
	}
	md := EnvelopeMarkdown(env, pics)
	if err := os.MkdirAll(filepath.Dir(mdPath), 0o755); err != nil {
		return err
	}
	return os.WriteFile(mdPath, md, 0o644)
}

// Chart names the report writes (charts/<theme>/<name>.png).
const (
	ChartThroughput = "throughput"
	ChartIterations = "iteration-rate"
	ChartLatency    = "latency-percentiles"
	ChartEndpoints  = "endpoint-latency"
)

// envCharts draws the report's charts and returns the <picture> snippet
// of each by name.
func envCharts(env *envelope.Envelope, dir string) (map[string]string, error) {
	var cats []string
	var rps, ips, p50, p95, p99 []float64
	for i, r := range env.Runs {
		cats = append(cats, envRunLabel(r.Source, i))
		rps = append(rps, r.RPS)
		ips = append(ips, r.IterationsPerS)
		p50 = append(p50, math.Max(r.Median, 1e-3))
		p95 = append(p95, math.Max(r.P95, 1e-3))
		p99 = append(p99, math.Max(r.P99, 1e-3))
	}
	t := env.Throughput
	charts := []struct {
		name, alt string
		c         chart.Chart
	}{
		{ChartThroughput, "Throughput per run with the band", chart.Chart{
			Title: "Throughput per run (http_reqs rate)", YLabel: "req/s", Categories: cats,
			Lines: []chart.Series{{Name: "run rate", Values: rps}},
			Bands: []chart.Band{{Name: fmt.Sprintf("band %s–%s req/s", envFig(t.Min), envFig(t.Max)), Low: t.Min, High: t.Max},
				{Name: fmt.Sprintf("95%% CI of the mean %s–%s", envFig(t.CILow), envFig(t.CIHigh)), Low: t.CILow, High: t.CIHigh}}}},
	}
	if env.Iterations.N > 0 {
		it := env.Iterations
		charts = append(charts, struct {
			name, alt string
			c         chart.Chart
		}{ChartIterations, "Iteration rate per run with the band", chart.Chart{
			Title: "Iteration rate per run", YLabel: "iter/s", Categories: cats,
			Lines: []chart.Series{{Name: "run rate", Values: ips}},
			Bands: []chart.Band{{Name: fmt.Sprintf("band %s–%s iter/s", envFig(it.Min), envFig(it.Max)), Low: it.Min, High: it.Max}}}})
	}
	l := env.Latency
	if l.P95.N > 0 {
		c := chart.Chart{
			Title: "http_req_duration per run: p50, p95, p99 and their bands", YLabel: "ms (log scale)", Categories: cats, LogY: true,
			Lines: []chart.Series{{Name: "p50", Values: p50}, {Name: "p95", Values: p95}},
			Bands: []chart.Band{{Name: "p50 band", Low: l.Median.Min, High: l.Median.Max}, {Name: "p95 band", Low: l.P95.Min, High: l.P95.Max}},
		}
		if l.P99.N > 0 {
			c.Lines = append(c.Lines, chart.Series{Name: "p99", Values: p99})
			c.Bands = append(c.Bands, chart.Band{Name: "p99 band", Low: l.P99.Min, High: l.P99.Max})
		}
		charts = append(charts, struct {
			name, alt string
			c         chart.Chart
		}{ChartLatency, "Latency percentiles per run with the bands", c})
	}
	if names := envEndpointNames(env); len(names) > 0 {
		var rs []chart.Range
		for _, st := range []struct {
			name string
			get  func(envelope.Endpoint) envelope.Band
		}{
			{"median", func(e envelope.Endpoint) envelope.Band { return e.Median }},
			{"p95", func(e envelope.Endpoint) envelope.Band { return e.P95 }},
			{"p99", func(e envelope.Endpoint) envelope.Band { return e.P99 }},
			{"max", func(e envelope.Endpoint) envelope.Band { return e.Max }},
		} {
			r := chart.Range{Name: st.name}
			ok := true
			for _, n := range names {
				b := st.get(env.Endpoints[n])
				if b.N == 0 || b.Min <= 0 {
					ok = false
					break
				}
				mid := b.Mean
				if mid == 0 {
					mid = math.Sqrt(b.Min * b.Max) // the middle of the band on the log axis
				}
				r.Values = append(r.Values, mid)
				r.Low = append(r.Low, b.Min)
				r.High = append(r.High, b.Max)
			}
			if ok {
				rs = append(rs, r)
			}
		}
		if len(rs) > 0 {
			charts = append(charts, struct {
				name, alt string
				c         chart.Chart
			}{ChartEndpoints, "Per-endpoint latency distribution", chart.Chart{
				Title: "Per-endpoint latency: median, p95, p99, max (whiskers: band across runs)", YLabel: "ms (log scale)",
				Categories: envDisplayNames(env, names), LogY: true, Ranges: rs}})
		}
	}
	pics := map[string]string{}
	for _, c := range charts {
		p, err := chart.WriteThemed(c.c, dir, c.name)
		if err != nil {
			return nil, err
		}
		pics[c.name] = chart.Picture(c.alt, p)
	}
	return pics, nil
}

// EnvelopeMarkdown renders the report text; pics holds the <picture>
// snippets by chart name (missing ones are left out).
func EnvelopeMarkdown(env *envelope.Envelope, pics map[string]string) []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	n := len(env.Runs)
	runs := envCount(n) + " run"
	if n != 1 {
		runs += "s"
	}
	title := env.Name
	if title == "" {
		title = "baseline"
	}
	w := env.Provenance.Workload
	p("# Baseline envelope: %s\n\n", title)
	p("A single reference profile derived from %s: the baseline performance envelope and the steady-state operating point%s.\n\n", runs, envWorkloadPhrase(w))

	p("## Sources\n\n| File | Format | k6 | SHA-256 |\n| :-- | :-- | :-- | :-- |\n")
	for _, s := range env.Provenance.Sources {
		v := s.K6Version
		if v == "" {
			v = "unknown"
		}
		p("| `%s` | %s | %s | `%s` |\n", s.File, s.Format, v, envShort(s.SHA256))
	}
	p("\n")
	if w.VUs > 0 || w.Executor != "" || w.Duration != "" {
		p("Workload: ")
		var parts []string
		if w.VUs > 0 {
			parts = append(parts, fmt.Sprintf("%d VUs", w.VUs))
		}
		if w.Executor != "" {
			parts = append(parts, "executor `"+w.Executor+"`")
		}
		if len(w.Scenarios) > 0 {
			parts = append(parts, "scenarios "+strings.Join(w.Scenarios, ", "))
		}
		if w.Duration != "" {
			parts = append(parts, w.Duration+" per run")
		}
		if env.Provenance.SkipWarmup != "" {
			parts = append(parts, "first "+env.Provenance.SkipWarmup+" skipped as warm-up")
		}
		p("%s.\n\n", strings.Join(parts, ", "))
	}

	p("## Method\n\n")
	p("- Throughput: each run contributes one RPS sample (its `http_reqs` rate); report mean, min, max, sample standard deviation (n−1), and coefficient of variation (CV).\n")
	p("- HTTP percentiles (p95, p99): report the band across runs (min and max of the %s k6-reported values). The mean of run-level p95s is never treated as a pooled p95.\n", envCount(n))
	p("- Medians and averages: report min/max across runs and the mean of the per-run values.\n")
	p("- Errors: `http_req_failed` failures of all requests, summed over runs.\n")
	if n < 2 {
		// Student t needs n−1 ≥ 1 degrees of freedom: say so rather than
		// quote an interval with 0 of them.
		p("- Beyond the single-run figures: a confidence interval for mean throughput and the minimum detectable change of the mean need at least two runs, so this single-run envelope has neither; repeat the test at least 3 times.\n\n")
	} else {
		p("- Beyond the single-run figures: a %s confidence interval for mean throughput (Student t, %d degrees of freedom) and the minimum detectable change of the mean (5%% level, 80%% power) given %s and the CV.\n\n",
			envPct(env.Tolerance.Confidence, 0), n-1, runs)
	}

	t := env.Throughput
	p("## Throughput (http_reqs rate)\n\n")
	p("| Mean | Min | Max | Std dev | CV | %s CI of the mean | Min. detectable change |\n| ---: | ---: | ---: | ---: | ---: | :-- | ---: |\n", envPct(env.Tolerance.Confidence, 0))
	ci := "n/a (fewer than 2 runs)"
	if t.N >= 2 {
		ci = envFig(t.CILow) + "–" + envFig(t.CIHigh) + " req/s"
	}
	mdcCell := envMDC(t)
	if m, ok := CompareMDC(env, t.N); ok {
		mdcCell = envPct(m, 1)
	}
	p("| %s req/s | %s req/s | %s req/s | %s | %s | %s | %s |\n\n", envFig(t.Mean), envFig(t.Min), envFig(t.Max), envFig(t.StdDev), envPct(t.CV, 2), ci, mdcCell)
	if sent := compareMDCSentence(env); sent != "" {
		p("The minimum detectable change in the table is for a later set of as many runs as this baseline (%d). %s\n\n", t.N, sent)
	}
	p("req/s (RPS) is k6's `http_reqs` per second: the aggregate HTTP request rate across all endpoints the workload invokes. It is not VU arrivals per second and not scenario iterations per second (reported separately below).\n\n")
	switch {
	case t.N < 2:
		p("With a single run there is no run-to-run variation to report.\n\n")
	case t.CV < 0.01:
		p("At CV %s, throughput is effectively deterministic steady-state at this load: variation across runs is negligible for capacity planning.\n\n", envPct(t.CV, 2))
	case t.CV < 0.05:
		p("At CV %s, throughput is steady across runs; changes smaller than the minimum detectable change above cannot be told from noise.\n\n", envPct(t.CV, 2))
	default:
		p("At CV %s, throughput varies noticeably across runs; check the runs for warm-up, noisy neighbours or saturation before using this baseline.\n\n", envPct(t.CV, 2))
	}
	envPic(&b, pics, ChartThroughput)
	p("| Run | Duration | Requests | req/s | Iterations | iter/s | Requests/iteration |\n| :-- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for i, r := range env.Runs {
		p("| %s | %s s | %s | %s | %s | %s | %s |\n", envRunLabel(r.Source, i), strconv.FormatFloat(r.DurationSeconds, 'f', 1, 64), envThousands(r.Requests), envFig(r.RPS), envThousands(r.Iterations), envFig(r.IterationsPerS), envFixed(r.RequestsPerIter, 2))
	}
	p("\n")

	if it := env.Iterations; it.N > 0 {
		rpi := env.RequestsPerIteration
		p("## Iteration rate (scenario completions)\n\n")
		p("k6 reports completed scenario iterations separately from HTTP RPS.\n\n")
		p("- Mean %s iter/s (%s iter/s band), std dev %s, CV %s.\n", envFig(it.Mean), envRange(it.Min, it.Max, -1), envFig(it.StdDev), envPct(it.CV, 2))
		p("- HTTP requests per iteration (total http_reqs ÷ iterations for that run): about %s (mean %s).\n\n", envRange(rpi.Min, rpi.Max, 2), envFixed(rpi.Mean, 2))
		p("That ratio is useful when comparing business throughput (iterations) to raw HTTP throughput (RPS) under different VU counts or scenario mixes.\n\n")
		envPic(&b, pics, ChartIterations)
	}

	l := env.Latency
	p("## Latency (HTTP overall, http_req_duration)\n\n")
	if l.P95.N == 0 && l.Median.N == 0 {
		p("No run has `http_req_duration`.\n\n")
	} else {
		envBandLine(&b, "Median", l.Median, true, "mean of per-run medians")
		envBandLine(&b, "Avg", l.Avg, true, "mean")
		envBandLine(&b, "p95", l.P95, false, "")
		envBandLine(&b, "p99", l.P99, false, "")
		envBandLine(&b, "Max", l.Max, false, "")
		p("\n")
		envPic(&b, pics, ChartLatency)
		p("| Run | Median | Avg | p95 | p99 | Max | Max above the p99 band |\n| :-- | ---: | ---: | ---: | ---: | ---: | :-- |\n")
		for i, r := range env.Runs {
			out := "no"
			if r.MaxOutlier {
				out = "yes (outlier)"
			}
			p("| %s | %s ms | %s ms | %s ms | %s ms | %s ms | %s |\n", envRunLabel(r.Source, i), envFig(r.Median), envFig(r.Avg), envFig(r.P95), envFig(r.P99), envFig(r.Max), out)
		}
		p("\n")
		p("Note on “mean of per-run medians”: it summarizes central tendency across runs when variance is small; it is not a pooled median over all requests. Use it as a compact headline figure, not as a substitute for a single-run or merged histogram.\n\n")
		if outliers := envOutliers(env); outliers > 0 {
			if outliers == 1 {
				p("Note on per-run maxima: a single maximum (~%s) sits above the aggregate p99 band (%s ms) in %d of %d runs and is therefore an outlier in the sense of the reported percentile ladder; summary figures alone cannot say what caused it.\n\n",
					envSecondsRange(l.Max), envRange(l.P99.Min, l.P99.Max, -1), outliers, n)
			} else {
				p("Note on per-run maxima: %s maxima (~%s) sit above the aggregate p99 band (%s ms) in %d of %d runs and are therefore outliers in the sense of the reported percentile ladder; summary figures alone cannot say what caused them.\n\n",
					envRareWord(outliers, n), envSecondsRange(l.Max), envRange(l.P99.Min, l.P99.Max, -1), outliers, n)
			}
		}
	}

	e := env.Errors
	p("## Error rate\n\n")
	failedRuns := 0
	for _, r := range env.Runs {
		if r.Failed > 0 {
			failedRuns++
		}
	}
	if e.Failed == 0 {
		p("- %s http_req_failed in all %d runs (%s total HTTP requests).\n\n", envPct(e.Rate, 2), n, envThousands(e.Total))
	} else {
		p("- %s http_req_failed: %s of %s HTTP requests failed, in %d of %d runs.\n\n", envPct(e.Rate, 3), envThousands(e.Failed), envThousands(e.Total), failedRuns, n)
	}

	names := envEndpointNames(env)
	if len(names) > 0 {
		p("## Endpoint bands (custom metrics, across %s)\n\n", runs)
		for _, name := range names {
			ep := env.Endpoints[name]
			p("### %s\n\n", ep.DisplayName(name))
			switch {
			case ep.Metric == "":
				p("`http_req_duration` where `%s` is `%s`.\n\n", ep.Tag, ep.Value)
			case ep.Label != "":
				p("Custom metric `%s`.\n\n", ep.Metric)
			}
			envBandLine(&b, "Avg", ep.Avg, true, "mean")
			envBandLine(&b, "Median", ep.Median, false, "")
			envBandLine(&b, "p95", ep.P95, false, "")
			envBandLine(&b, "p99", ep.P99, false, "")
			envBandLine(&b, "Max", ep.Max, false, "")
			if ep.Share > 0 {
				p("- Share of requests: %s\n", envPct(ep.Share, 1))
			}
			p("\n")
		}
		envPic(&b, pics, ChartEndpoints)

		p("## Aggregate tail behaviour\n\n")
		var above, below []string
		for _, name := range names {
			ep := env.Endpoints[name]
			switch {
			case ep.P95.N > 0 && l.P95.N > 0 && ep.P95.Min > l.P95.Max:
				above = append(above, ep.DisplayName(name))
			case ep.P95.N > 0:
				below = append(below, ep.DisplayName(name))
			}
		}
		if len(above) > 0 {
			p("%s %s p95 bands above the aggregate p95 band (%s ms) and therefore %s the aggregate http_req_duration p95/p99 at this mix: %s the system-wide tail for the workload as executed.",
				envList(above), envVerb(len(above), "has", "have"), envRange(l.P95.Min, l.P95.Max, -1), envVerb(len(above), "dominates", "dominate"), envVerb(len(above), "it defines", "they define"))
			if len(below) > 0 {
				p(" %s %s comparatively flat; the tail shape is driven by %s and %s variance.", envList(below), envVerb(len(below), "is", "are"), envList(above), envVerb(len(above), "its", "their"))
			}
			p("\n\n")
		} else {
			p("No endpoint's p95 band lies above the aggregate p95 band (%s ms): the tail is not dominated by one endpoint.\n\n", envRange(l.P95.Min, l.P95.Max, -1))
		}
	}

	p("## Steady-state operating point\n\n")
	p("%s, the system sustains about %s req/s mean HTTP throughput with %s req/s observed across %s",
		envOperatingPrefix(w)+envTopologyPhrase(env), envFixed(t.Mean, 1), envRange(t.Min, t.Max, -1), runs)
	if it := env.Iterations; it.N > 0 {
		p(", and %s iter/s mean iteration rate (%s iter/s band)", envFig(it.Mean), envRange(it.Min, it.Max, -1))
	}
	p(".")
	if l.Median.N > 0 {
		p(" Aggregate HTTP latency shows ~%s ms as the mean of per-run medians", envFixed(l.Median.Mean, 1))
		if l.P95.N > 0 {
			p(", observed aggregate p95 values in the %s ms range across runs", envRange(l.P95.Min, l.P95.Max, -1))
		}
		if l.P99.N > 0 {
			p(", observed aggregate p99 in the %s ms range", envRange(l.P99.Min, l.P99.Max, -1))
		}
		if envOutliers(env) > 0 {
			if envOutliers(env) == 1 {
				p(", and a single ~%s maximum that sits above p99 and is treated as an outlier (see latency notes above)", envSecondsRange(l.Max))
			} else {
				p(", and %s ~%s maxima that sit above p99 and are treated as outliers (see latency notes above)", envRareWord(envOutliers(env), n), envSecondsRange(l.Max))
			}
		}
		p(".")
	}
	if e.Failed == 0 {
		p(" Zero HTTP failures were recorded across all runs.\n\n")
	} else {
		p(" %s HTTP failures were recorded (%s).\n\n", envThousands(e.Failed), envPct(e.Rate, 3))
	}

	s := env.Saturation
	p("## Saturation\n\n")
	switch {
	case s.BelowSaturation:
		p("Verdict: **below saturation**. There was no throughput degradation, no broad latency inflation and no error emergence across the %s, which indicates the system was operating below saturation at this load level for the tested topology.\n\n", runs)
	case s.Verdict != "":
		p("Verdict: **%s**.\n\n", s.Verdict)
	}
	for _, r := range s.Reasons {
		p("- %s\n", r)
	}
	p("\n")

	if len(env.Warnings) > 0 {
		p("## Warnings\n\n")
		for _, wn := range env.Warnings {
			p("- %s\n", wn)
		}
		p("\n")
	}
	if mdc := compareMDCList(env); mdc != "" {
		p("Use this profile as the quantitative reference for later comparisons (VU steps, task count, runtime changes): with `exporter compare`, a later mean throughput must move by more than %s to be told apart from this baseline.\n", mdc)
	} else {
		p("Use this profile as the quantitative reference for later comparisons (VU steps, task count, runtime changes); with fewer than 2 baseline runs, no minimum detectable change can be given.\n")
	}
	return b.Bytes()
}

// envFig formats a figure as the document does: four significant
// figures, at most two decimals (55.97, 357.7, 7.01, 1020).
func envFig(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	d := 3 - int(math.Floor(math.Log10(math.Abs(v))))
	d = max(0, min(2, d))
	s := strconv.FormatFloat(v, 'f', d, 64)
	// Rounding may carry into a new digit (99.996 → 100.00); redo at the new magnitude.
	if r, _ := strconv.ParseFloat(s, 64); math.Floor(math.Log10(math.Abs(r))) != math.Floor(math.Log10(math.Abs(v))) {
		d = max(0, min(2, 3-int(math.Floor(math.Log10(math.Abs(r))))))
		s = strconv.FormatFloat(v, 'f', d, 64)
	}
	return s
}

func envFixed(v float64, d int) string { return strconv.FormatFloat(v, 'f', d, 64) }

// envRange is "lo–hi" with the document's en dash (d < 0 uses envFig), or
// one figure when both ends print the same (a band from a single run),
// never "931.4–931.4".
func envRange(lo, hi float64, d int) string {
	a, b := envFixed(lo, d), envFixed(hi, d)
	if d < 0 {
		a, b = envFig(lo), envFig(hi)
	}
	if a == b {
		return a
	}
	return a + "–" + b
}

// envPct formats a ratio as a percentage with d decimals.
func envPct(r float64, d int) string { return strconv.FormatFloat(100*r, 'f', d, 64) + "%" }

// compareCandidateRuns are the candidate counts the report gives the
// minimum detectable change for.
var compareCandidateRuns = []int{1, 3, 5}

// CompareMDC is the minimum detectable change of mean throughput (ratio)
// that compare reports for k candidate runs whose spread equals the
// baseline runs'. ok is false with fewer than 2 baseline runs.
func CompareMDC(env *envelope.Envelope, k int) (float64, bool) {
	return compare.ThroughputMDC(env, k)
}

// compareMDCList is "1.0% with 1 run, 0.8% with 3 runs or 0.7% with 5
// runs", or "" when it cannot be computed.
func compareMDCList(env *envelope.Envelope) string {
	var parts []string
	for _, k := range compareCandidateRuns {
		m, ok := CompareMDC(env, k)
		if !ok {
			return ""
		}
		word := "runs"
		if k == 1 {
			word = "run"
		}
		parts = append(parts, fmt.Sprintf("%s with %d %s", envPct(m, 1), k, word))
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

func compareMDCSentence(env *envelope.Envelope) string {
	l := compareMDCList(env)
	if l == "" {
		return ""
	}
	conf := env.Tolerance.Confidence
	if !(conf > 0 && conf < 1) {
		conf = 0.95
	}
	return fmt.Sprintf("`exporter compare` (run-level log model, %s confidence, 80%% power, later runs of the baseline's typical size) detects a change of mean throughput of %s.", envPct(conf, 0), l)
}

func envMDC(s envelope.Spread) string {
	if s.N < 2 || s.MDC == 0 {
		return "n/a (fewer than 2 runs)"
	}
	return envPct(s.MDC, 1)
}

// envBandLine writes "- Avg: 7.01 / 9.00 ms (mean 8.02 ms)"; a band whose
// both ends are a second or more is written in seconds ("1.10 / 1.39 s").
func envBandLine(b *bytes.Buffer, label string, band envelope.Band, withMean bool, meanLabel string) {
	if band.N == 0 {
		return
	}
	if band.Min >= 1000 && band.Max >= 1000 {
		fmt.Fprintf(b, "- %s: %s / %s s", label, envFixed(band.Min/1000, 2), envFixed(band.Max/1000, 2))
		if withMean && band.Mean != 0 {
			fmt.Fprintf(b, " (%s %s s)", meanLabel, envFixed(band.Mean/1000, 2))
		}
	} else {
		fmt.Fprintf(b, "- %s: %s / %s ms", label, envFig(band.Min), envFig(band.Max))
		if withMean && band.Mean != 0 {
			fmt.Fprintf(b, " (%s %s ms)", meanLabel, envFig(band.Mean))
		}
	}
	if band.N == 1 {
		b.WriteString(" (one run)")
	}
	b.WriteString("\n")
}

// envSecondsRange is "2.1–2.8 s" for the maxima band.
func envSecondsRange(band envelope.Band) string {
	if band.Max < 1000 {
		return envRange(band.Min, band.Max, -1) + " ms"
	}
	return envRange(band.Min/1000, band.Max/1000, 1) + " s"
}

func envOutliers(env *envelope.Envelope) int {
	k := 0
	for _, r := range env.Runs {
		if r.MaxOutlier {
			k++
		}
	}
	return k
}

// envRareWord: one maximum per run is rare among thousands of requests.
func envRareWord(k, _ int) string {
	if k == 1 {
		return "a single"
	}
	return "rare"
}

func envEndpointNames(env *envelope.Envelope) []string {
	names := make([]string, 0, len(env.Endpoints))
	for k := range env.Endpoints {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func envRunLabel(source string, i int) string {
	if source == "" {
		return fmt.Sprintf("run %d", i+1)
	}
	base := filepath.Base(source)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

func envShort(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// envThousands writes 101882 as 101,882.
func envThousands(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

var envWords = []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}

func envCount(n int) string {
	if n >= 0 && n < len(envWords) {
		return envWords[n]
	}
	return strconv.Itoa(n)
}

func envList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = "`" + x + "`"
	}
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

func envVerb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func envWorkloadPhrase(w envelope.Workload) string {
	var parts []string
	if w.VUs > 0 {
		parts = append(parts, fmt.Sprintf("%d VUs", w.VUs))
	}
	if w.Executor != "" {
		parts = append(parts, w.Executor)
	}
	if len(parts) == 0 {
		return ""
	}
	return " at " + strings.Join(parts, ", ")
}

// envTopologyPhrase is ", 1 ECS task per service, 256 CPU / 512 MiB, …"
// from the topology the baseline recorded, else from the ECS operating
// point's task size; "" when neither tells.
func envTopologyPhrase(env *envelope.Envelope) string {
	if ph := env.Topology.Phrase(); ph != "" {
		return ", " + ph
	}
	if e := env.ECS; e != nil && (e.Tasks > 0 || e.TaskCPUUnits > 0) {
		t := &envelope.Topology{TaskCPUUnits: e.TaskCPUUnits, TaskMemoryMiB: e.TaskMemoryMiB}
		ph := t.Phrase()
		if e.Tasks > 0 {
			word := "tasks"
			if e.Tasks == 1 {
				word = "task"
			}
			ph = strings.TrimPrefix(fmt.Sprintf("%d ECS %s, %s", e.Tasks, word, ph), ", ")
			ph = strings.TrimSuffix(ph, ", ")
		}
		if ph != "" {
			return ", " + ph
		}
	}
	return ""
}

// envDisplayNames maps endpoint keys to their labels.
func envDisplayNames(env *envelope.Envelope, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = env.Endpoints[n].DisplayName(n)
	}
	return out
}

func envOperatingPrefix(w envelope.Workload) string {
	if w.VUs > 0 {
		return fmt.Sprintf("At %d concurrent users", w.VUs)
	}
	return "At the tested load"
}

func envPic(b *bytes.Buffer, pics map[string]string, name string) {
	if s, ok := pics[name]; ok {
		b.WriteString(s)
		b.WriteString("\n")
	}
}
