package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/k6options"
	"github.com/envelope-dev/envelope/internal/page"
	"github.com/envelope-dev/envelope/internal/report"
	"github.com/envelope-dev/envelope/internal/stagereport"
)

// reportCommand adds `envelope report`.
func (c *cli) reportCommand(app *kingpin.Application) {
	cmd := app.Command("report", "Write a report: the envelope report (--envelope), or the per-endpoint stage report of one run's points (FILE with --k6-options or --stages).")
	envPath := cmd.Flag("envelope", "Envelope file: write its Markdown report with charts, and the report as one self-contained HTML page beside it.").ExistingFile()
	optsPath := cmd.Flag("k6-options", "`k6 inspect script.js` output giving the executor and the stage windows.").ExistingFile()
	scenario := cmd.Flag("scenario", "Report only this scenario of the k6 options: its samples, windowed by its stages (default: every scenario with stages, each sample windowed by its own scenario's stages when they differ).").String()
	stages := cmd.Flag("stages", "Stage list instead of --k6-options, e.g. 5m:1,5m:10,5m:50 (ramping-arrival-rate from 0, per second).").String()
	groupBy := cmd.Flag("group-by", "Tag naming an endpoint.").Default("name").String()
	baseline := cmd.Flag("baseline-endpoint", "Endpoint the cost is relative to (default: the smallest effective batch).").String()
	batchMetric := cmd.Flag("batch-metric", "k6 metric whose samples are batch sizes (default batch_size).").String()
	batchTag := cmd.Flag("batch-tag", "Tag on http_req_duration samples holding the batch size (instead of --batch-metric).").String()
	status := cmd.Flag("status", "Status of the samples in the stage latency stats.").Default("200").String()
	start := cmd.Flag("start", "Test start (RFC 3339 or Unix seconds); default: the earliest sample.").String()
	params := cmd.Flag("params", "YAML with title, region, mode, profile, settings, stack and notes for the configuration tables.").ExistingFile()
	out := cmd.Flag("out", "Report file (Markdown; charts go to charts/ beside it, and the self-contained HTML page, same name with .html). Default report.md; for --format json, stdout. - for stdout.").String()
	format := cmd.Flag("format", cmdline.Choices("Stage report format.", "markdown", "json")).Default("markdown").Enum("markdown", "json")
	file := cmd.Arg("FILE", "k6 point file of one run (--out json NDJSON, optionally .gz, or --out csv).").String()
	cmd.Action(c.Action(func() error {
		if *envPath != "" {
			if *file != "" {
				return errors.New("give either --envelope or a run FILE, not both")
			}
			env, err := envelope.ReadFile(*envPath)
			if err != nil {
				return err
			}
			md := *out
			if md == "" {
				md = "report.md"
			}
			if err := report.WriteEnvelopeReport(env, md); err != nil {
				return err
			}
			html, err := writePageBeside(md, page.Info, envelopeVerdict(env))
			if err != nil {
				return err
			}
			c.Printf("envelope report: %s, %s\n", md, html)
			return nil
		}
		if *file == "" {
			return errors.New("report: give a run FILE for the stage report, or --envelope E for the envelope report")
		}
		cfg := stagereport.StageConfig{GroupBy: *groupBy, Baseline: *baseline, BatchMetric: *batchMetric, BatchTag: *batchTag, Status: *status}
		var err error
		switch {
		case *optsPath != "" && *stages != "":
			return errors.New("give either --k6-options or --stages, not both")
		case *optsPath != "":
			o, err := k6options.Load(*optsPath)
			if err != nil {
				return err
			}
			if cfg.Staged, err = o.Stages(*scenario); err != nil {
				return err
			}
			cfg.Scenario = cfg.Staged.Scenarios[0]
		case *stages != "":
			if cfg.Scenario, err = k6options.ParseStages(*stages, ""); err != nil {
				return err
			}
		default:
			return errors.New("the stage report needs the stage windows: give --k6-options (k6 inspect output) or --stages 5m:1,5m:10,5m:50")
		}
		if *start != "" {
			if cfg.Start, err = parseStart(*start); err != nil {
				return err
			}
		}
		if *params != "" {
			if cfg.Params, err = stagereport.LoadParams(*params); err != nil {
				return err
			}
			cfg.EndpointOrder = cfg.Params.Endpoints
		}
		run, err := k6.Load(*file, k6.LoadOptions{KeepPoints: true})
		if err != nil {
			return err
		}
		r, err := stagereport.BuildStageReport(run.Points, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", *file, err)
		}
		log := c.Logger()
		for _, w := range r.Warnings {
			log.Warn(w)
		}
		switch {
		case *format == "json" && (*out == "" || *out == "-"):
			return r.WriteJSON(c.Stdout)
		case *format == "json":
			f, err := os.Create(*out)
			if err != nil {
				return err
			}
			if err := r.WriteJSON(f); err != nil {
				_ = f.Close() // the write error is the one to report
				return err
			}
			return f.Close()
		case *out == "-":
			return r.WriteMarkdown(c.Stdout)
		}
		md := *out
		if md == "" {
			md = "report.md"
		}
		if err := stagereport.WriteStageReport(r, md); err != nil {
			return err
		}
		html, err := writePageBeside(md, page.Info, stageVerdict(r))
		if err != nil {
			return err
		}
		c.Printf("stage report: %s, %s (%s, %s)\n", md, html, plural(len(r.Endpoints), "endpoint"), plural(len(r.Windows), "stage"))
		return nil
	}))
}

// parseStart reads --start: RFC 3339 or Unix seconds.
func parseStart(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("--start %q: want RFC 3339 (2026-11-30T09:00:00Z) or Unix seconds", s)
}

// plural is "1 stage", "3 stages".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
