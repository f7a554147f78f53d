package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/report"
)

// baselineCommand adds `envelope baseline`.
func (c *cli) baselineCommand(app *kingpin.Application) {
	cmd := app.Command("baseline", "Derive the baseline envelope from repeated k6 runs: throughput spread, p95/p99 bands, errors, endpoint bands, saturation verdict.")
	name := cmd.Flag("name", "Name of the envelope.").Default("baseline").String()
	skip := cmd.Flag("skip-warmup", "Drop the first D of each run's points as warm-up (point files: --out json or csv).").Duration()
	groupBy := cmd.Flag("group-by", "Tag whose values get endpoint bands, e.g. name (point files and tagged sub-metrics).").String()
	opts := cmd.Flag("k6-options", "`k6 inspect script.js` output giving the workload: VUs, executor, scenarios, duration.").ExistingFile()
	match := cmd.Flag("match", "PromQL label matchers (without braces) selecting the k6 tests this envelope judges, e.g. 'envelope=\"checkout-50vu\"' or 'scenario=\"baseline_mix\", testid=~\"nightly-.*\"'; empty judges every test.").String()
	force := cmd.Flag("force", "Accept runs whose workloads or metric sets differ (the differences become warnings).").Bool()
	out := cmd.Flag("out", "Envelope file to write; - for stdout.").Default("envelope.yaml").String()
	format := cmd.Flag("format", cmdline.Choices("Envelope encoding.", "yaml", "json")).Default("yaml").Enum("yaml", "json")
	labels := cmd.Flag("endpoint-label", "NAME=LABEL: the display name reports and dashboards show for an endpoint, e.g. auth_login='Auth login (Cognito)'; repeatable.").Strings()
	topo := cmd.Flag("topology", "KEY=VALUE: a fact of what the runs ran on, for the operating point (keys: platform, tasks_per_service, task_cpu_units, task_memory_mib, runtime, load_generator, note); repeatable.").Strings()
	params := cmd.Flag("params", "YAML with labels (name: label) and topology (the --topology keys); flags override it.").ExistingFile()
	mode := addModeFlags(cmd)
	files := cmd.Arg("FILE", "k6 result files of repeated runs of one test (any format k6 writes).").Required().Strings()
	cmd.Action(c.Action(func() error {
		// A bad match is refused before any run is read.
		if _, err := envelope.ParseMatch(*match); err != nil {
			return fmt.Errorf("--match: %w", err)
		}
		bp := &envelope.BaselineParams{Labels: map[string]string{}}
		if *params != "" {
			var err error
			if bp, err = envelope.LoadBaselineParams(*params); err != nil {
				return err
			}
		}
		for _, kv := range *labels {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" {
				return fmt.Errorf("--endpoint-label %q: want NAME=LABEL", kv)
			}
			bp.Labels[k] = v
		}
		for _, kv := range *topo {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || v == "" {
				return fmt.Errorf("--topology %q: want KEY=VALUE", kv)
			}
			if bp.Topology == nil {
				bp.Topology = &envelope.Topology{}
			}
			if err := bp.Topology.Set(k, v, "--topology"); err != nil {
				return err
			}
		}
		lopts := mode.apply(figures.LoadOptions(*skip, *groupBy))
		// kingpin hands a bare "-" over as an empty string.
		for i, f := range *files {
			if f == "" {
				(*files)[i] = "-"
			}
		}
		in, err := figures.ReadFiles(*files, lopts)
		if err != nil {
			return err
		}
		for _, w := range duplicateRuns(in) {
			c.Logger().Warn(w)
		}
		o := envelope.Options{Name: *name, Match: *match, GroupBy: *groupBy, SkipWarmup: *skip, Force: *force}
		if *opts != "" {
			if o.Workload, err = envelope.ReadK6Options(*opts); err != nil {
				return err
			}
		}
		env, err := envelope.Compute(in, o)
		if err != nil {
			return err
		}
		if err := env.SetLabels(bp.Labels); err != nil {
			return err
		}
		env.Topology = bp.Topology
		log := c.Logger()
		for _, w := range env.Warnings {
			log.Warn(w)
		}
		f := envelope.Format(*format)
		if *out == "-" || *out == "" {
			b, err := envelope.Marshal(env, f)
			if err != nil {
				return err
			}
			_, err = c.Stdout.Write(b)
			return err
		}
		if err := envelope.WriteFile(*out, env, f); err != nil {
			return err
		}
		c.Print(headline(env))
		c.Printf("envelope: %s\n", *out)
		return nil
	}))
}

// demoBaseline writes the demo envelope, its report and the second
// envelope.
func demoBaseline(_ context.Context, d *demoEnv) error {
	env, err := demo.Envelope()
	if err != nil {
		return err
	}
	envPath := filepath.Join(d.Dir, "envelope.yaml")
	if err := envelope.WriteFile(envPath, env, envelope.YAML); err != nil {
		return err
	}
	mdPath := filepath.Join(d.Dir, "report.md")
	if err := report.WriteEnvelopeReport(env, mdPath); err != nil {
		return err
	}
	d.Print(headline(env))
	d.Printf("envelope: %s\nenvelope report: %s (charts in %s)\n", envPath, mdPath, filepath.Join(d.Dir, "charts"))
	second, err := demo.SecondEnvelope()
	if err != nil {
		return err
	}
	secondPath := filepath.Join(d.Dir, "envelopes", second.Name+".yaml")
	if err := envelope.WriteFile(secondPath, second, envelope.YAML); err != nil {
		return err
	}
	d.Printf("second envelope: %s (match %s; the first judges every test)\n", secondPath, second.Match)
	return nil
}

// headline is the envelope in three lines: throughput (mean, band, CV),
// latency (p95 and p99 bands, each marked when a run has too few requests
// to estimate it, mean of medians), errors and saturation.
// A band whose ends print alike (one run) is one figure, not "x–x".
func headline(env *envelope.Envelope) string {
	var b strings.Builder
	t, l := env.Throughput, env.Latency
	span := func(format string, lo, hi float64) string {
		a, z := fmt.Sprintf(format, lo), fmt.Sprintf(format, hi)
		if a == z {
			return a
		}
		return a + "–" + z
	}
	if t.N == 1 {
		fmt.Fprintf(&b, "throughput: %s req/s in 1 run (no spread from a single run)\n", span("%.2f", t.Min, t.Max))
	} else {
		fmt.Fprintf(&b, "throughput: mean %.1f req/s, %s req/s across %d runs, CV %.2f%%\n", t.Mean, span("%.2f", t.Min, t.Max), t.N, 100*t.CV)
	}
	if l.P95.N > 0 {
		sup := env.Support("")
		unestimated := func(n figures.Name) string {
			if sup.Estimates(n) {
				return ""
			}
			return fmt.Sprintf(" (not estimable: %s requests a run, %s needs %s)", sup.Requests(), n.Def().Label, figures.Thousands(n.Def().RequestsNeeded()))
		}
		fmt.Fprintf(&b, "latency: p95 %s ms%s", span("%.1f", l.P95.Min, l.P95.Max), unestimated(figures.P95))
		if l.P99.N > 0 {
			fmt.Fprintf(&b, ", p99 %s ms%s", span("%.1f", l.P99.Min, l.P99.Max), unestimated(figures.P99))
		}
		fmt.Fprintf(&b, ", mean of medians %.1f ms\n", l.Median.Mean)
	}
	fmt.Fprintf(&b, "errors: %d of %d requests failed; saturation: %s\n", env.Errors.Failed, env.Errors.Total, env.Saturation.Verdict)
	return b.String()
}

// duplicateRuns names input files with the same bytes: one run counted
// twice narrows the spread and the bands.
func duplicateRuns(in []figures.Run) []string {
	var out []string
	first := map[string]string{}
	for _, i := range in {
		if i.Provenance.SHA256 == "" || i.Provenance.File == "-" {
			continue
		}
		if f, ok := first[i.Provenance.SHA256]; ok {
			out = append(out, fmt.Sprintf("%s has the same content as %s (sha256 %.12s…): the same run counted twice narrows the spread and the bands", i.Provenance.File, f, i.Provenance.SHA256))
			continue
		}
		first[i.Provenance.SHA256] = i.Provenance.File
	}
	return out
}
