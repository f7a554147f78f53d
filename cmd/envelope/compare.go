package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/page"
)

// compareCommand adds `envelope compare`.
func (c *cli) compareCommand(app *kingpin.Application) {
	cmd := app.Command("compare", "Judge candidate runs against an envelope ("+compareExitCodes+"), or fit the Universal Scalability Law to runs at several load levels (--scaling).")
	envPath := cmd.Flag("envelope", "Baseline envelope file.").ExistingFile()
	tolerance := cmd.Flag("tolerance", "Override the envelope's tolerance: a latency rise and throughput drop (10%, 0.1), or latency=10%,throughput=5%,errors=0.1%.").String()
	confidence := cmd.Flag("confidence", "Confidence of the intervals (default: the envelope's, else 0.95).").Float64()
	method := cmd.Flag("method", cmdline.Choices("Interval method over runs: Welch t on log values, or a percentile bootstrap over runs.", "welch", "bootstrap")).Default("welch").Enum("welch", "bootstrap")
	allow := cmd.Flag("allow-workload-change", "Accept candidates of another VU count or duration (a planned step beyond the baseline: more VUs, a longer run).").Bool()
	scaling := cmd.Flag("scaling", "Fit the USL to the runs instead of comparing with an envelope.").Bool()
	levels := cmd.Flag("levels", "Load level of each FILE in order (default: each run's peak VUs), e.g. 10,20,50.").String()
	unit := cmd.Flag("level-unit", "Unit of the levels, for the sentences and chart.").Default("VUs").String()
	eff := cmd.Flag("efficiency", "Efficiency X(N)/(λN) below which throughput no longer scales linearly.").Default("0.8").Float64()
	chartDir := cmd.Flag("chart-dir", "Folder for the scaling chart (light/ and dark/ PNGs); empty for none.").Default("charts").String()
	format := cmd.Flag("format", cmdline.Choices("Output format: junit is one test case per figure (a regression fails), markdown for a pull-request comment or $GITHUB_STEP_SUMMARY, html one self-contained page (no network needed) with a verdict banner.", compareFormats...)).Default("text").Enum(compareFormats...)
	out := cmd.Flag("out", "Write the result to FILE instead of stdout (any format; e.g. compare.html with --format html).").PlaceHolder("FILE").String()
	var skipSet bool
	skip := cmd.Flag("skip-warmup", "Drop the first D of each candidate's points (default: the warm-up the envelope skipped; 0 keeps the whole run).").IsSetByUser(&skipSet).Duration()
	mode := addModeFlags(cmd)
	files := cmd.Arg("FILE", "k6 result files of the candidate runs (any format k6 writes).").Required().Strings()
	cmd.Action(c.Action(func() error {
		if *scaling && (*out != "" || *format == "html") {
			return errors.New("--out and --format html are for comparisons against an envelope, not --scaling")
		}
		if *scaling {
			return c.runScaling(*files, *levels, *unit, *eff, *chartDir, *format)
		}
		if *envPath == "" {
			return errors.New("compare: give --envelope E, or --scaling")
		}
		env, err := envelope.ReadFile(*envPath)
		if err != nil {
			return err
		}
		opts := compare.Options{Method: *method, AllowWorkloadChange: *allow}
		if opts.Tolerance, err = parseTolerance(*tolerance); err != nil {
			return err
		}
		if *confidence != 0 {
			if !(*confidence > 0 && *confidence < 1) {
				return fmt.Errorf("--confidence %v: want a value in (0,1), e.g. 0.95", *confidence)
			}
			opts.Tolerance.Confidence = *confidence
		}
		if opts.SkipWarmup, err = candidateWarmup(env, *skip, skipSet); err != nil {
			return err
		}
		runs, err := loadCandidates(*files, mode.apply(figures.LoadOptions(opts.SkipWarmup, env.Provenance.GroupBy)), skipSet)
		if err != nil {
			return err
		}
		res, err := compare.Compare(env, runs, opts)
		if err != nil {
			return err
		}
		cmp := comparison{res: res, env: env, runs: runs, window: windowLine(opts.SkipWarmup, skipSet)}
		if *out == "" {
			err = writeComparison(c.Stdout, cmp, *format)
		} else {
			err = writeComparisonFile(*out, cmp, *format)
		}
		if err != nil {
			return err
		}
		if *out != "" {
			c.Printf("compare: %s\n", *out)
		}
		if res.Regressed {
			return cmdline.WithCode(cmdline.CodeRegression, nil)
		}
		return nil
	}))
}

// compareFormats are the output formats of a comparison.
var compareFormats = []string{"text", "json", "junit", "markdown", "html"}

// writeResult writes a comparison in one of compareFormats.
func writeResult(w io.Writer, res *compare.Result, format string) error {
	return writeComparison(w, comparison{res: res}, format)
}

// writeComparison writes a comparison in one of compareFormats; the text
// and the page start with its window, the part of each candidate run
// measured, when it is given.
func writeComparison(w io.Writer, c comparison, format string) error {
	res := c.res
	switch format {
	case "json":
		return res.WriteJSON(w)
	case "junit":
		return res.WriteJUnit(w)
	case "markdown":
		return res.WriteMarkdown(w)
	case "html":
		d, err := comparePage(c)
		if err != nil {
			return err
		}
		b, err := page.Render(d)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if c.window != "" {
		if _, err := fmt.Fprintln(w, c.window); err != nil {
			return err
		}
	}
	return res.WriteText(w)
}

// writeComparisonFile writes a comparison to path, creating its folder.
func writeComparisonFile(path string, c comparison, format string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeComparison(f, c, format); err != nil {
		_ = f.Close() // the write error is the one to report
		return err
	}
	return f.Close()
}

// demoCompare prints the verdict on the last two sample runs.
func demoCompare(_ context.Context, d *demoEnv) error {
	env, err := demo.Envelope()
	if err != nil {
		return err
	}
	in, err := demo.Inputs()
	if err != nil {
		return err
	}
	lines, err := demoCompareLines(env, in)
	if err != nil {
		return err
	}
	for _, l := range lines {
		d.Printf("compare: %s\n", l)
	}
	return nil
}

// demoCompareLines judges the last two sample runs against the envelope
// of all of them (a like-for-like check that should find no regression)
// and says which runs were compared before the sentences.
func demoCompareLines(env *envelope.Envelope, in []figures.Run) ([]string, error) {
	runs := demoCandidates(in)
	var cands, base []string
	for _, r := range runs {
		cands = append(cands, filepath.Base(r.Source))
	}
	for _, s := range env.Provenance.Sources {
		base = append(base, filepath.Base(s.File))
	}
	res, err := compare.Compare(env, runs, compare.Options{})
	if err != nil {
		return nil, err
	}
	verdict := "no regression"
	if res.Regressed {
		verdict = "REGRESSION"
	}
	lines := []string{fmt.Sprintf("candidates %s against the envelope %q of %s: %s", strings.Join(cands, ", "), env.Name, strings.Join(base, ", "), verdict)}
	lines = append(lines, res.Sentences...)
	return lines, nil
}

// demoCandidates are the runs the demo compares with the envelope: the
// last two sample runs.
func demoCandidates(in []figures.Run) []figures.Run { return in[len(in)-2:] }

// candidateWarmup is the warm-up to drop from candidate runs: the flag
// when given, else the one the envelope recorded, so candidates are
// measured over the same window as the baseline runs.
func candidateWarmup(env *envelope.Envelope, flag time.Duration, set bool) (time.Duration, error) {
	if set {
		if flag < 0 {
			return 0, fmt.Errorf("--skip-warmup %s: want a non-negative duration", flag)
		}
		return flag, nil
	}
	if env.Provenance.SkipWarmup == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(env.Provenance.SkipWarmup)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("envelope provenance.skip_warmup %q: not a duration", env.Provenance.SkipWarmup)
	}
	return d, nil
}

// loadCandidates reads each candidate run's figures, refusing the runs
// the warm-up cannot be dropped from instead of judging them over
// another window than the envelope's: a summary file, whose figures
// cover the whole run, and a run no longer than the warm-up, of which
// nothing is left.
func loadCandidates(files []string, opts k6.LoadOptions, set bool) ([]figures.Run, error) {
	whose := "the envelope's warm-up"
	if set {
		whose = "the warm-up (--skip-warmup)"
	}
	skip := opts.SkipWarmup
	var runs []figures.Run
	for _, f := range files {
		if f == "" {
			f = "-"
		}
		r, err := k6.Load(f, opts)
		if err != nil {
			return nil, err
		}
		if skip > 0 && r.Mode == k6.ModeSummary {
			return nil, fmt.Errorf("%s: a summary file holds whole-run figures, so %s of %s cannot be skipped; give the run's point file (k6 --out json or csv), or --skip-warmup 0 to judge the whole run", f, whose, skip)
		}
		if skip > 0 && len(r.Metrics) == 0 && f != "-" {
			// Nothing is left after the warm-up: say how long the run was.
			whole, err := k6.Load(f, k6.LoadOptions{Stats: []string{"count"}})
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%s: the run (%s) is no longer than %s (%s), so no sample is left to judge; give --skip-warmup with a shorter warm-up, or 0 to judge the whole run", f, whole.Duration.Round(time.Second), whose, skip)
		}
		fr, err := figures.Read(r, figures.Source{File: r.Source}, figures.OptionsOf(opts))
		if err != nil {
			return nil, err
		}
		runs = append(runs, fr)
	}
	return runs, nil
}

// windowLine says over which part of each candidate run the figures were
// measured.
func windowLine(skip time.Duration, set bool) string {
	switch {
	case skip > 0 && set:
		return fmt.Sprintf("Window: first %s of each candidate skipped as warm-up (--skip-warmup).", skip)
	case skip > 0:
		return fmt.Sprintf("Window: first %s of each candidate skipped as warm-up, as in the envelope (--skip-warmup overrides).", skip)
	case set:
		return "Window: the whole run of each candidate (--skip-warmup 0)."
	}
	return "Window: the whole run of each candidate, as in the envelope."
}

// parseTolerance reads "10%" / "0.1" (latency rise and throughput drop)
// or "latency=10%,throughput=5%,errors=0.1%".
func parseTolerance(s string) (figures.Tolerance, error) {
	var t figures.Tolerance
	if s == "" {
		return t, nil
	}
	frac := func(v string) (float64, error) {
		v = strings.TrimSpace(v)
		div := 1.0
		if strings.HasSuffix(v, "%") {
			v, div = strings.TrimSuffix(v, "%"), 100
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f/div >= 1 {
			return 0, fmt.Errorf("--tolerance: %q is not a fraction in [0,1) or a percentage", v)
		}
		return f / div, nil
	}
	if !strings.Contains(s, "=") {
		f, err := frac(s)
		t.LatencyRise, t.ThroughputDrop = f, f
		return t, err
	}
	for _, part := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(part, "=")
		f, err := frac(v)
		if err != nil {
			return t, err
		}
		switch strings.TrimSpace(k) {
		case "latency":
			t.LatencyRise = f
		case "throughput":
			t.ThroughputDrop = f
		case "errors":
			t.ErrorRatio = f
		default:
			return t, fmt.Errorf("--tolerance: unknown key %q (want latency, throughput, errors)", k)
		}
	}
	return t, nil
}

func (c *cli) runScaling(files []string, levels, unit string, eff float64, chartDir, format string) error {
	var lv []float64
	if levels != "" {
		for _, p := range strings.Split(levels, ",") {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || f <= 0 {
				return fmt.Errorf("--levels: %q is not a positive number", p)
			}
			lv = append(lv, f)
		}
		if len(lv) != len(files) {
			return fmt.Errorf("--levels gives %d levels for %d files", len(lv), len(files))
		}
	}
	if !(eff > 0 && eff < 1) {
		return fmt.Errorf("--efficiency %v: want a value in (0,1)", eff)
	}
	runs, err := loadCandidates(files, k6.LoadOptions{}, false)
	if err != nil {
		return err
	}
	var pts []compare.ScalingPoint
	for i, r := range runs {
		level := 0.0
		if lv != nil {
			level = lv[i]
		}
		p, err := compare.PointFromRun(r, level)
		if err != nil {
			return err
		}
		pts = append(pts, p)
	}
	s, err := compare.Scale(pts, unit, eff)
	if err != nil {
		return err
	}
	if format == "json" {
		err = s.WriteJSON(c.Stdout)
	} else {
		err = s.WriteText(c.Stdout)
	}
	if err != nil {
		return err
	}
	if chartDir != "" {
		ps, err := s.WriteChart(chartDir, "scaling")
		if err != nil {
			return err
		}
		if format == "text" {
			c.Printf("chart: %s, %s\n", filepath.Join(filepath.Dir(chartDir), ps.Light), filepath.Join(filepath.Dir(chartDir), ps.Dark))
		}
	}
	return nil
}
