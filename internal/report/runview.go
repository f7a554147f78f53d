package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

// NoTimelineSentence is what the single-run view says of a run read
// from a summary, which holds no sample times.
const NoTimelineSentence = "This run was read from a summary, which keeps no sample times, so it cannot be shown over time: " +
	"its point stream (`k6 run --out json=run.json`) would show its request rate, latency percentiles and failures over time."

// runViewLabels is about how many time labels the X axis of a run's
// charts carries: one every few bins, so they stay readable.
const runViewLabels = 8

// runChart is one chart of a run over time and its alt text.
type runChart struct {
	Alt string
	chart.Chart
}

// runCharts are the charts of one run over time.
type runCharts struct {
	Rate, Latency runChart
	// Failures is nil when no request failed or failures per bin are
	// unknown.
	Failures *runChart
}

// list is the charts in the order the section shows them.
func (cs runCharts) list() []runChart {
	out := []runChart{cs.Rate, cs.Latency}
	if cs.Failures != nil {
		out = append(out, *cs.Failures)
	}
	return out
}

// RunOverTime is the Markdown section showing one run over time, as
// k6's web dashboard shows a run (request rate, latency percentiles,
// failures, checks), with the envelope's bands over the charts and the
// verdicts res gave the run's figures: a heading naming the run, its
// charts as inline pictures (both themes in the page), its checks and
// its verdicts. env nil draws no bands; res nil gives no verdicts. A
// run read from a summary has no timeline: the section then says so.
func RunOverTime(run figures.Run, env *envelope.Envelope, res *compare.Result) (string, error) {
	if res != nil && !slices.Contains(res.Candidates, run.Source) {
		return "", fmt.Errorf("run over time: %s is not among the compared runs (%s)", run.Source, strings.Join(res.Candidates, ", "))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Run over time: %s\n\n", mdText(run.Source))
	b.WriteString(runSummaryLine(run) + "\n\n")
	switch {
	case run.Workload.Summary:
		b.WriteString(NoTimelineSentence + "\n\n")
	case run.Timeline == nil || len(run.Timeline.Bins) == 0:
		b.WriteString("This run's samples were not read by time, so it cannot be shown over time.\n\n")
	default:
		cs := runViewCharts(run, env, res)
		fmt.Fprintf(&b, "Time bins of %s from the run's first sample%s; the first and the last bin are cut to the run's span, so each bin's rate is its requests over the time it covers. ",
			shortDuration(run.Timeline.Width), runWarmupPhrase(run))
		if env != nil {
			fmt.Fprintf(&b, "Shaded: the envelope %s's bands across its baseline runs (run-level figures: a bin's figures, from fewer requests, scatter more).", mdText(env.Name))
		}
		b.WriteString("\n\n")
		for _, c := range cs.list() {
			pic, err := chart.InlinePicture(c.Alt, c.Chart)
			if err != nil {
				return "", fmt.Errorf("run over time: %s: %w", run.Source, err)
			}
			b.WriteString(pic + "\n")
		}
	}
	b.WriteString(runFailuresText(run, env))
	b.WriteString(runChecksTable(run))
	b.WriteString(runVerdictsTable(run, res))
	return b.String(), nil
}

// runSummaryLine is the run's headline figures in one sentence.
func runSummaryLine(run figures.Run) string {
	s := fmt.Sprintf("%s requests over %s (%s req/s); p50 %s ms, p95 %s ms, p99 %s ms",
		figures.Thousands(run.Requests), shortDuration(run.Duration()), envFig(run.RPS), envFig(run.Median), envFig(run.P95), envFig(run.P99))
	if run.Checked > 0 {
		s += fmt.Sprintf("; %s failed (%s)", figures.Thousands(run.Failed), failPct(run.ErrorRate()))
	}
	return s + "."
}

// runWarmupPhrase says what warm-up the loader cut before the first sample.
func runWarmupPhrase(run figures.Run) string {
	if run.Workload.Skipped > 0 {
		return fmt.Sprintf(" (after the %s warm-up left out)", shortDuration(run.Workload.Skipped))
	}
	return ""
}

// runViewCharts builds the run's charts: its request rate per bin with
// its mean and the envelope's throughput band; p50, p95 and p99 per bin
// with the envelope's bands (a log axis when they lie more than a decade
// apart); and its failure rate per bin. Each title carries the verdict
// res gave the figure it shows.
func runViewCharts(run figures.Run, env *envelope.Envelope, res *compare.Result) runCharts {
	bins := run.Timeline.Bins
	cats := runTimeLabels(bins)
	n := len(bins)
	rate := make([]float64, n)
	mean := make([]float64, n)
	p50, p95, p99 := make([]float64, n), make([]float64, n), make([]float64, n)
	fails := make([]float64, n)
	lo, hi := math.Inf(1), 0.0
	for i, bin := range bins {
		rate[i] = bin.Rate()
		mean[i] = run.RPS
		p50[i], p95[i], p99[i] = math.NaN(), math.NaN(), math.NaN()
		if bin.Requests > 0 {
			p50[i], p95[i], p99[i] = bin.P50, bin.P95, bin.P99
			lo, hi = math.Min(lo, bin.P50), math.Max(hi, bin.P99)
		}
		fails[i] = 100 * bin.FailureRate()
	}
	var cs runCharts
	const xLabel = "time since the run's first sample (m:ss, bin start)"
	cs.Rate.Alt = fmt.Sprintf("Request rate of %s over time", run.Source)
	cs.Rate.Chart = chart.Chart{
		Title:  "Request rate over time: http_reqs per bin" + verdictSuffix(res, figures.RPS),
		XLabel: xLabel, YLabel: "req/s", Categories: cats,
		Lines: []chart.Series{{Name: "rate in the bin", Values: rate},
			{Name: fmt.Sprintf("the run's rate %s req/s", envFig(run.RPS)), Values: mean, Dashed: true}},
	}
	cs.Latency.Alt = fmt.Sprintf("Latency percentiles of %s over time", run.Source)
	cs.Latency.Chart = chart.Chart{
		Title:  "http_req_duration over time: p50, p95, p99 per bin" + verdictSuffix(res, figures.Median, figures.P95, figures.P99),
		XLabel: xLabel, YLabel: "ms", Categories: cats,
		Lines: []chart.Series{{Name: "p50", Values: p50}, {Name: "p95", Values: p95}, {Name: "p99", Values: p99}},
	}
	var latencyBands []envelope.Band
	if env != nil {
		if t := env.Throughput; t.N > 0 {
			cs.Rate.Bands = append(cs.Rate.Bands, chart.Band{Name: fmt.Sprintf("envelope band %s req/s", envRange(t.Min, t.Max, -1)), Low: t.Min, High: t.Max})
		}
		latencyBands = []envelope.Band{env.Latency.Median, env.Latency.P95, env.Latency.P99}
	}
	// Each band takes the colour of its line (the i-th band the i-th
	// line's), so the bands go unnamed and each line's name gives its
	// band: three legend rows, not six.
	for i, bd := range latencyBands {
		if bd.N == 0 {
			// A later band would take this one's colour: it is left
			// out too (an envelope without p99 lacks only the last).
			break
		}
		cs.Latency.Bands = append(cs.Latency.Bands, chart.Band{Low: bd.Min, High: bd.Max})
		cs.Latency.Lines[i].Name += fmt.Sprintf(" · envelope band %s ms", envRange(bd.Min, bd.Max, -1))
		lo, hi = math.Min(lo, bd.Min), math.Max(hi, bd.Max)
	}
	if lo > 0 && hi/lo > 10 {
		cs.Latency.LogY = true
		cs.Latency.YLabel = "ms (log scale)"
	}
	if run.Timeline.Failures && run.Failed > 0 {
		// Points, not a line: failures are rare events, and a line
		// through the empty bins would read as a trend.
		at := make([]int, n)
		runRate := make([]float64, n)
		for i := range at {
			at[i] = i
			runRate[i] = 100 * run.ErrorRate()
		}
		cs.Failures = &runChart{Alt: fmt.Sprintf("Failed requests of %s over time", run.Source)}
		cs.Failures.Chart = chart.Chart{
			Title:  "Failed requests over time: http_req_failed per bin" + verdictSuffix(res, figures.ErrorRate),
			XLabel: xLabel, YLabel: "% of the bin's requests", Categories: cats,
			Lines:  []chart.Series{{Name: fmt.Sprintf("the run's failure rate %s", failPct(run.ErrorRate())), Values: runRate, Dashed: true}},
			Points: []chart.Points{{Name: "failed in the bin", At: at, Values: fails}},
		}
	}
	return cs
}

// runTimeLabels label the bins by their start, "m:ss", about
// runViewLabels of them (every k-th bin); the others are blank.
func runTimeLabels(bins []figures.TimeBin) []string {
	every := max(1, (len(bins)+runViewLabels-1)/runViewLabels)
	out := make([]string, len(bins))
	for i, b := range bins {
		if i%every == 0 {
			out[i] = clock(b.Offset)
		}
	}
	return out
}

// clock is a duration as "m:ss" (whole seconds, rounded down).
func clock(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// shortDuration is a duration in whole seconds, "8s", "6m2s"; under a
// second as Go writes it.
func shortDuration(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	return d.Round(time.Second).String()
}

// verdictSuffix is " · p95: Regression, p99: Pass": the verdicts res
// gave the aggregate's figures ns; "" without res or those figures.
func verdictSuffix(res *compare.Result, ns ...figures.Name) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, n := range ns {
		for _, f := range res.Figures {
			if f.Endpoint == "" && f.Name == n {
				parts = append(parts, fmt.Sprintf("%s: %s", n.Def().Label, f.Verdict))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " · " + strings.Join(parts, ", ")
}

// failPct is a failure ratio as a percentage, to three decimals (a
// failure in 20,000 requests still shows).
func failPct(r float64) string { return envPct(r, 3) }

// runFailuresText is the run's failures: how many, their rate, the
// envelope's, and where they fell over time.
func runFailuresText(run figures.Run, env *envelope.Envelope) string {
	var b strings.Builder
	b.WriteString("### Failures\n\n")
	switch {
	case run.Checked == 0:
		b.WriteString("The run has no http_req_failed metric: its failures are unknown.\n\n")
		return b.String()
	case run.Failed == 0:
		fmt.Fprintf(&b, "No request failed (http_req_failed judged %s).", figures.Thousands(run.Checked))
	default:
		fmt.Fprintf(&b, "%s of %s requests failed (%s)", figures.Thousands(run.Failed), figures.Thousands(run.Checked), failPct(run.ErrorRate()))
		if tl := run.Timeline; tl != nil && tl.Failures {
			with, worst := 0, figures.TimeBin{}
			for _, bin := range tl.Bins {
				if bin.Failed > 0 {
					with++
				}
				if bin.FailureRate() > worst.FailureRate() {
					worst = bin
				}
			}
			fmt.Fprintf(&b, ", in %d of %d time bins; the most in the bin at %s: %d of %d (%s)",
				with, len(tl.Bins), clock(worst.Offset), worst.Failed, worst.Judged, failPct(worst.FailureRate()))
		}
		b.WriteString(".")
	}
	if env != nil && env.Errors.Total > 0 {
		fmt.Fprintf(&b, " The envelope's baseline runs failed %s of %s (%s).", figures.Thousands(env.Errors.Failed), figures.Thousands(env.Errors.Total), failPct(env.Errors.Rate))
	}
	b.WriteString("\n\n")
	return b.String()
}

// runChecksTable is the run's checks: passes, fails and pass rate.
func runChecksTable(run figures.Run) string {
	var b strings.Builder
	b.WriteString("### Checks\n\n")
	if len(run.Checks) == 0 {
		b.WriteString("The run has no checks.\n\n")
		return b.String()
	}
	b.WriteString("| Check | Passes | Fails | Pass rate |\n| --- | ---: | ---: | ---: |\n")
	for _, c := range run.Checks {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdCell(c.Name), figures.Thousands(c.Passes), figures.Thousands(c.Fails), envPct(c.Rate(), 2))
	}
	b.WriteString("\n")
	return b.String()
}

// runVerdictsTable is the verdict of each figure res judged: the
// envelope's value, the candidates', the change and the verdict. With
// several candidates they were judged together, which it says.
func runVerdictsTable(run figures.Run, res *compare.Result) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Verdicts\n\n")
	if len(res.Candidates) > 1 {
		fmt.Fprintf(&b, "This run was judged with %d other candidate runs, together: the verdicts are theirs jointly.\n\n", len(res.Candidates)-1)
	}
	if len(res.Figures) == 0 {
		b.WriteString("No figure was judged.\n\n")
		return b.String()
	}
	b.WriteString("| Figure | Envelope | Candidate | Change | Verdict |\n| --- | ---: | ---: | ---: | --- |\n")
	for _, f := range res.Figures {
		base, cand, change := f.ValueCells()
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCell(f.Label()), base, cand, change, f.Verdict)
	}
	b.WriteString("\n")
	return b.String()
}

// mdText escapes the characters Markdown would read as markup.
func mdText(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`).Replace(s)
}

// mdCell is text in a table cell: escaped, its pipes too.
func mdCell(s string) string { return strings.ReplaceAll(mdText(s), "|", `\|`) }
