// Package report writes the Markdown reports of a baseline envelope
// and of a line of history, with their charts in light and dark.
package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/rules"
)

// WriteEnvelopeReport writes the envelope's Markdown report to mdPath and
// its charts, in light and dark variants, to charts/light and charts/dark
// beside it. The sections go from how the envelope was made to what it
// says about load (Method; Throughput; Iteration rate; Latency; Error
// rate; Endpoint bands; Aggregate tail behaviour; Steady-state operating
// point; Saturation), each figure rounded for reading (see envFig).
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
	md, err := EnvelopeMarkdown(env, pics)
	if err != nil {
		return err
	}
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
	pics := map[string]string{}
	for _, c := range envChartList(env) {
		p, err := chart.WriteThemed(c.c, dir, c.name)
		if err != nil {
			return nil, err
		}
		pics[c.name] = chart.Picture(c.alt, p)
	}
	return pics, nil
}

// namedChart is one chart of the report: its file name, alt text and
// what it draws.
type namedChart struct {
	name, alt string
	c         chart.Chart
}

// envChartList is every chart the envelope report draws. Runs are
// independent, so each is a marker at its value, never joined by a line
// that would read as a trend; each band (min–max across the runs) is a
// fill behind them, in the hue of its series.
func envChartList(env *envelope.Envelope) []namedChart {
	labels := envRunLabels(env)
	charts := []namedChart{{ChartThroughput, "Throughput per run with the band, the mean's 95% CI and the alert floor", throughputChart(env, labels)}}
	if env.Iterations.N > 0 {
		charts = append(charts, namedChart{ChartIterations, "Iteration rate per run with the band, on an axis from zero", iterationChart(env, labels)})
	}
	if env.Latency.P95.N > 0 {
		charts = append(charts, namedChart{ChartLatency, "Latency percentiles p50, p95 and p99 per run with their bands, log scale", latencyChart(env, labels)})
	}
	if names := envEndpointNames(env); len(names) > 0 {
		var rs []chart.Range
		for _, fig := range []figures.Name{figures.Median, figures.P95, figures.P99, figures.Max} {
			r := chart.Range{Name: fig.Def().Label}
			ok := true
			for _, n := range names {
				b := env.Endpoints[n].Band(fig)
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
			charts = append(charts, namedChart{ChartEndpoints, "Per-endpoint latency distribution", chart.Chart{
				Title: "Per-endpoint latency: median, p95, p99, max (whiskers: band across runs)", YLabel: "ms (log scale)",
				Categories: envDisplayNames(env, names), LogY: true, Ranges: rs}})
		}
	}
	return charts
}

// meanCategory is the throughput chart's last category: the mean of the
// runs with its confidence interval, apart from the runs themselves.
const meanCategory = "mean of runs"

// Hues of the throughput chart (palette colours, 1-based): the mean's
// interval and the alert floor each in a hue of their own, apart from
// the runs and their band.
const (
	hueMean  = 2
	hueFloor = 4
)

// throughputChart draws each run's http_reqs rate as a marker over the
// band, the mean with its confidence interval as a whisker in a column
// of its own, and the throughput floor the alert rules fire below. The
// floor brings the axis down to it, so a run's distance from the others
// reads at its size against what would alert; the title states the
// run-to-run CV.
func throughputChart(env *envelope.Envelope, labels []string) chart.Chart {
	t := env.Throughput
	n := len(env.Runs)
	runs := chart.Range{Name: "run rate"}
	for _, r := range env.Runs {
		runs.Values = append(runs.Values, r.RPS)
	}
	c := chart.Chart{
		Title:  "Throughput per run (http_reqs rate), CV " + envPct(t.CV, 2),
		YLabel: "req/s", Categories: labels, Ranges: []chart.Range{runs},
		Bands: []chart.Band{{Name: "band " + envRange(t.Min, t.Max, -1) + " req/s", Low: t.Min, High: t.Max, Hue: 1}},
	}
	if t.N >= 2 {
		// The mean has an interval only from two runs on.
		mean := chart.Range{Name: fmt.Sprintf("mean, %s CI %s–%s", envPct(figures.Confidence(env.Tolerance.Confidence), 0), envFig(t.CILow), envFig(t.CIHigh)), Hue: hueMean,
			Values: nanValues(n + 1), Low: nanValues(n + 1), High: nanValues(n + 1)}
		mean.Values[n], mean.Low[n], mean.High[n] = t.Mean, t.CILow, t.CIHigh
		c.Categories = append(append([]string{}, labels...), meanCategory)
		c.Ranges[0].Values = append(c.Ranges[0].Values, math.NaN())
		c.Ranges = append(c.Ranges, mean)
	}
	if cal, err := rules.Calibrate(env); err == nil && cal.Throughput.Floor > 0 {
		f := cal.Throughput.Floor
		c.Bands = append(c.Bands, chart.Band{Name: fmt.Sprintf("alert floor %s req/s (%s window)", envFig(f), cal.Throughput.WindowStr), Low: f, High: f, Hue: hueFloor})
	}
	return c
}

// nanValues is n values that draw nothing.
func nanValues(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

// iterationChart draws each run's iteration rate as a marker over its
// band, on an axis from zero (no alert judges the iteration rate, so
// zero is the scale its differences read against), the CV in the title.
func iterationChart(env *envelope.Envelope, labels []string) chart.Chart {
	it := env.Iterations
	r := chart.Range{Name: "run rate"}
	for _, run := range env.Runs {
		r.Values = append(r.Values, run.IterationsPerS)
	}
	return chart.Chart{
		Title:  "Iteration rate per run, CV " + envPct(it.CV, 2),
		YLabel: "iter/s", Categories: labels, ZeroY: true, Ranges: []chart.Range{r},
		Bands: []chart.Band{{Name: "band " + envRange(it.Min, it.Max, -1) + " iter/s", Low: it.Min, High: it.Max, Hue: 1}},
	}
}

// latencyChart draws each run's http_req_duration p50, p95 and p99 as
// markers, with the run's own confidence interval as a whisker where the
// run's samples gave one, over each percentile's band in its hue, on a
// log axis (the median and the tail lie decades apart).
func latencyChart(env *envelope.Envelope, labels []string) chart.Chart {
	l := env.Latency
	c := chart.Chart{Title: "http_req_duration per run: p50, p95, p99 and their bands", YLabel: "ms (log scale)", Categories: labels, LogY: true}
	for i, p := range []struct {
		name string
		band envelope.Band
		at   func(figures.Run) (float64, *figures.Interval)
	}{
		{"p50", l.Median, func(r figures.Run) (float64, *figures.Interval) { return r.Median, r.MedianCI }},
		{"p95", l.P95, func(r figures.Run) (float64, *figures.Interval) { return r.P95, r.P95CI }},
		{"p99", l.P99, func(r figures.Run) (float64, *figures.Interval) { return r.P99, r.P99CI }},
	} {
		if p.band.N == 0 {
			continue
		}
		r := chart.Range{Name: p.name, Hue: i + 1}
		for _, run := range env.Runs {
			v, ci := p.at(run.Run)
			v = math.Max(v, 1e-3) // a log axis has no 0
			lo, hi := v, v
			if ci != nil && ci.Low > 0 && ci.Low <= v && v <= ci.High {
				lo, hi = ci.Low, ci.High
			}
			r.Values, r.Low, r.High = append(r.Values, v), append(r.Low, lo), append(r.High, hi)
		}
		c.Ranges = append(c.Ranges, r)
		c.Bands = append(c.Bands, chart.Band{Name: p.name + " band " + envRange(p.band.Min, p.band.Max, -1) + " ms", Low: math.Max(p.band.Min, 1e-3), High: math.Max(p.band.Max, 1e-3), Hue: i + 1})
	}
	return c
}

// EnvelopeMarkdown renders the report text; pics holds the <picture>
// snippets by chart name (missing ones are left out).
func EnvelopeMarkdown(env *envelope.Envelope, pics map[string]string) ([]byte, error) {
	var b bytes.Buffer
	if err := envelopeTemplate().Execute(&b, newEnvView(env, pics)); err != nil {
		return nil, fmt.Errorf("envelope report: %w", err)
	}
	return b.Bytes(), nil
}

//go:embed envelope.md.tmpl
var envelopeTemplateText string

// envelopeTemplate is parsed on first use, not at start: every command of
// the binary would otherwise pay for it (0.6 ms, 117 kB) before main.
var envelopeTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("envelope").Funcs(template.FuncMap{
		"fig":       envFig,
		"fixed":     envFixed,
		"pct":       envPct,
		"span":      envRange,
		"count":     envCount,
		"short":     envShort,
		"thousands": figures.Thousands,
		"runLabel":  envRunLabel,
		"ms":        envMS,
		"list":      envList,
		"verb":      envVerb,
		"band":      envBandText,
		"k6version": envK6Version,
	}).Parse(envelopeTemplateText))
})

// envView is what the envelope report template reads: the envelope and
// the phrases and tallies derived from it.
type envView struct {
	E              *envelope.Envelope
	T              envelope.Spread
	L              envelope.Latency
	N              int    // runs
	Runs           string // "five runs"
	Title          string
	WorkloadPhrase string
	ShowWorkload   bool
	Workload       string
	Confidence     string // "95%"
	DF             int
	CI             string
	MDCCell        string
	MDCSentence    string
	MDCList        string
	RunsPlan       string   // "### Runs a tight envelope needs" and its table, or ""
	Outliers       int      // runs whose max is an outlier (envelope.MaxOutliers)
	MaxFactor      int      // envelope.MaxOutlierFactor
	MaxVsOthers    []string // each run's max over the other runs' largest, marked when an outlier
	OutlierRuns    []string // the labels of the runs whose max is an outlier
	K6Versions     string   // the line under the Sources table on k6's version (envK6Versions)
	FailedRuns     int
	Endpoints      []envEndpointView
	Above, Below   []string // endpoints whose p95 band lies above / not above the aggregate's
	OperatingPoint string
	Pics           struct{ Throughput, Iterations, Latency, Endpoints string }
	RunLabels      []string // each run's name: its testid, else its file
	MaxSeconds     bool     // the Max band reads in s, so the run table's maxima do too
}

type envEndpointView struct {
	envelope.Endpoint
	Display string
	// Estimates is the line saying which percentiles the runs estimate,
	// "" when no run's request count is known.
	Estimates string
}

func newEnvView(env *envelope.Envelope, pics map[string]string) *envView {
	n := len(env.Runs)
	v := &envView{E: env, T: env.Throughput, L: env.Latency, N: n, DF: n - 1, Title: env.Name,
		Runs: envCount(n) + " run", Confidence: envPct(figures.Confidence(env.Tolerance.Confidence), 0), Outliers: envOutliers(env)}
	if n != 1 {
		v.Runs += "s"
	}
	if v.Title == "" {
		v.Title = "baseline"
	}
	w := env.Provenance.Workload
	v.WorkloadPhrase = envWorkloadPhrase(w)
	v.ShowWorkload, v.Workload = envWorkloadLine(env)
	v.CI = "n/a (fewer than 2 runs)"
	if v.T.N >= 2 {
		v.CI = envFig(v.T.CILow) + "–" + envFig(v.T.CIHigh) + " req/s"
	}
	v.MDCCell = envMDC(v.T)
	v.RunLabels = envRunLabels(env)
	v.MaxSeconds = envBandInSeconds(env.Latency.Max)
	v.MDCSentence = compareMDCSentence(env)
	v.MDCList = compareMDCList(env)
	v.RunsPlan = runsPlanSection(env)
	v.MaxFactor, v.MaxVsOthers = envelope.MaxOutlierFactor, envMaxVsOthers(env)
	v.K6Versions = envK6Versions(env.Provenance.Sources)
	for i, r := range env.Runs {
		if r.MaxOutlier {
			v.OutlierRuns = append(v.OutlierRuns, v.RunLabels[i])
		}
	}
	for _, r := range env.Runs {
		if r.Failed > 0 {
			v.FailedRuns++
		}
	}
	for _, name := range envEndpointNames(env) {
		ep := env.Endpoints[name]
		v.Endpoints = append(v.Endpoints, envEndpointView{Endpoint: ep, Display: ep.DisplayName(name), Estimates: envEstimates(env.Support(name))})
		switch {
		case ep.P95.N > 0 && v.L.P95.N > 0 && ep.P95.Min > v.L.P95.Max:
			v.Above = append(v.Above, ep.DisplayName(name))
		case ep.P95.N > 0:
			v.Below = append(v.Below, ep.DisplayName(name))
		}
	}
	v.OperatingPoint = envOperatingPrefix(w) + envTopologyPhrase(env)
	pic := func(name string) string {
		if s, ok := pics[name]; ok {
			return s + "\n"
		}
		return ""
	}
	v.Pics.Throughput, v.Pics.Iterations = pic(ChartThroughput), pic(ChartIterations)
	v.Pics.Latency, v.Pics.Endpoints = pic(ChartLatency), pic(ChartEndpoints)
	return v
}

// envWorkloadLine is the Sources section's "Workload: …" line, when the
// workload is known.
func envWorkloadLine(env *envelope.Envelope) (bool, string) {
	w := env.Provenance.Workload
	if w.VUs <= 0 && w.Executor == "" && w.Duration == "" {
		return false, ""
	}
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
	return true, strings.Join(parts, ", ")
}

// envFig formats a figure for reading: four significant figures, at most
// two decimals (55.97, 357.7, 7.01, 1020), fewer than the six the
// envelope keeps.
func envFig(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	d := 3 - int(math.Floor(math.Log10(math.Abs(v))))
	d = max(0, min(2, d))
	if roundsAHalf(v, d) {
		d++ // a stored figure ending in 5 was rounded once already: never twice
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	// Rounding may carry into a new digit (99.996 → 100.00); redo at the new magnitude.
	if r, _ := strconv.ParseFloat(s, 64); math.Floor(math.Log10(math.Abs(r))) != math.Floor(math.Log10(math.Abs(v))) {
		d = max(0, min(2, 3-int(math.Floor(math.Log10(math.Abs(r))))))
		s = strconv.FormatFloat(v, 'f', d, 64)
	}
	return s
}

// roundsAHalf reports whether v, printed with d decimals, would round
// away a final 5: v (already rounded to six significant figures in the
// envelope) would be rounded a second time, as 2387.496 stored as 2387.5
// would read 2388.
func roundsAHalf(v float64, d int) bool {
	_, frac, _ := strings.Cut(strconv.FormatFloat(v, 'f', -1, 64), ".")
	return len(frac) == d+1 && frac[d] == '5'
}

func envFixed(v float64, d int) string { return strconv.FormatFloat(v, 'f', d, 64) }

// envRange is "lo–hi" with an en dash, the sign of a range (d < 0 uses envFig), or
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

// compareMDCList is "1.0% with 1 run, 0.8% with 3 runs or 0.7% with 5
// runs", or "" when it cannot be computed.
func compareMDCList(env *envelope.Envelope) string {
	var parts []string
	for _, k := range compareCandidateRuns {
		m, ok := env.MDC(figures.RPS, k)
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
	conf := figures.Confidence(env.Tolerance.Confidence)
	return fmt.Sprintf("`envelope compare` (run-level log model, %s confidence, 80%% power, later runs of the baseline's typical size) detects a change of mean throughput of %s.", envPct(conf, 0), l)
}

func envMDC(s envelope.Spread) string {
	if s.N < 2 || s.MDC == 0 {
		return "n/a (fewer than 2 runs)"
	}
	return envPct(s.MDC, 1)
}

// envBandText is "- Avg: 7.01 / 9.00 ms (mean 8.02 ms)\n", the mean only
// with a meanLabel; a band whose both ends are a second or more is written
// in seconds ("1.10 / 1.39 s"); "" for a band no run has.
func envBandText(label string, band envelope.Band, meanLabel string) string {
	if band.N == 0 {
		return ""
	}
	var b strings.Builder
	withMean := meanLabel != ""
	label += " (min / max)"
	if envBandInSeconds(band) {
		fmt.Fprintf(&b, "- %s: %s / %s s", label, envFixed(band.Min/1000, 2), envFixed(band.Max/1000, 2))
		if withMean && band.Mean != 0 {
			fmt.Fprintf(&b, " (%s %s s)", meanLabel, envFixed(band.Mean/1000, 2))
		}
	} else {
		fmt.Fprintf(&b, "- %s: %s / %s ms", label, envFig(band.Min), envFig(band.Max))
		if withMean && band.Mean != 0 {
			fmt.Fprintf(&b, " (%s %s ms)", meanLabel, envFig(band.Mean))
		}
	}
	if band.N == 1 {
		b.WriteString(" (one run)")
	}
	b.WriteString("\n")
	return b.String()
}

// envBandInSeconds reports whether a latency band reads in seconds: both
// ends at least a second.
func envBandInSeconds(band envelope.Band) bool { return band.Min >= 1000 && band.Max >= 1000 }

// envMS is a latency in ms, or in s when inS.
func envMS(v float64, inS bool) string {
	if inS {
		return envFixed(v/1000, 2) + " s"
	}
	return envFig(v) + " ms"
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

// envK6Version is a source's cell in the Sources table's k6 column: the
// version its file gives, or that the file does not give one.
func envK6Version(s figures.Source) string {
	if s.K6Version != "" {
		return s.K6Version
	}
	return "not in the file"
}

// envK6Versions is the line under the Sources table on the k6 that wrote
// the runs: the versions the files give, with the files that give each,
// or which formats carry a version when none does.
func envK6Versions(srcs []figures.Source) string {
	by := map[string][]string{}
	var silent []string
	for _, s := range srcs {
		if s.K6Version != "" {
			by[s.K6Version] = append(by[s.K6Version], s.File)
		} else {
			silent = append(silent, s.File)
		}
	}
	if len(by) == 0 {
		return "None of these files gives the k6 version that wrote it: k6 writes its version into the machine-readable summary (`metadata.k6_version`) and into OTLP (`service.version`), not into `--out json` or `--out csv` nor into the legacy summaries (`--summary-export`, `handleSummary`'s data)."
	}
	vs := make([]string, 0, len(by))
	for v := range by {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("k6 %s (%s)", v, envList(by[v]))
	}
	line := "Written by " + strings.Join(parts, "; ") + "."
	if len(vs) > 1 {
		line += " The runs were written by different k6 versions."
	}
	if len(silent) > 0 {
		line += " " + envList(silent) + " " + envVerb(len(silent), "does", "do") + " not give a version."
	}
	return line
}

// envMaxVsOthers is each run's max over the largest max of the other
// runs ("1.15×"), marked "(outlier)" when the envelope marks it; "-"
// without another run with a max.
func envMaxVsOthers(env *envelope.Envelope) []string {
	out := make([]string, len(env.Runs))
	for i, r := range env.Runs {
		others := 0.0
		for j, o := range env.Runs {
			if j != i {
				others = max(others, o.Max)
			}
		}
		switch {
		case !(others > 0) || !(r.Max > 0):
			out[i] = "-"
		case r.MaxOutlier:
			out[i] = fmt.Sprintf("%.2f× (outlier)", r.Max/others)
		default:
			out[i] = fmt.Sprintf("%.2f×", r.Max/others)
		}
	}
	return out
}

func envEndpointNames(env *envelope.Envelope) []string {
	names := make([]string, 0, len(env.Endpoints))
	for k := range env.Endpoints {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// envRunLabels names each run by its testid, the name k6 and the
// dashboards know it by, when the runs' testids are known and differ;
// else by its file.
func envRunLabels(env *envelope.Envelope) []string {
	ids := map[string]string{}
	seen := map[string]bool{}
	for _, s := range env.Provenance.Sources {
		if s.TestID != "" {
			ids[s.File] = s.TestID
		}
	}
	out := make([]string, len(env.Runs))
	for i, r := range env.Runs {
		id := ids[r.Source]
		if id == "" || seen[id] {
			for j := range env.Runs {
				out[j] = envRunLabel(env.Runs[j].Source, j)
			}
			return out
		}
		seen[id] = true
		out[i] = id
	}
	return out
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

// envEstimates is the line saying which percentiles a trend's runs
// estimate, from their request counts (figures.Support): "- Percentiles
// its runs estimate (53–64 requests a run): median; not p95 (needs ≥ 200
// requests a run) nor p99 (≥ 1,000), which compare shows unjudged and
// the alert rules leave out.\n"; "" when no count is known.
func envEstimates(s figures.Support) string {
	if s.Runs == 0 {
		return ""
	}
	var yes, no []string
	for _, n := range figures.Percentiles() {
		label := n.Def().Label
		if s.Estimates(n) {
			yes = append(yes, label)
			continue
		}
		need := figures.Thousands(n.Def().RequestsNeeded())
		if len(no) == 0 {
			no = append(no, fmt.Sprintf("%s (needs ≥ %s requests a run)", label, need))
		} else {
			no = append(no, fmt.Sprintf("%s (≥ %s)", label, need))
		}
	}
	line := fmt.Sprintf("- Percentiles its runs estimate (%s requests a run): ", s.Requests())
	if len(yes) == 0 {
		line += "none"
	} else {
		line += strings.Join(yes, ", ")
	}
	if len(no) > 0 {
		line += "; not " + strings.Join(no, " nor ") + ", which `compare` shows unjudged and the alert rules leave out"
	}
	return line + ".\n"
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
