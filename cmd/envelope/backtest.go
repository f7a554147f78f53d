package main

import (
	"context"
	"encoding/json"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/backtest"
	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/rules"
)

// backtestCommand adds `envelope backtest`.
func (c *cli) backtestCommand(app *kingpin.Application) {
	cmd := app.Command("backtest", "Evaluate rule files as Prometheus does (its PromQL engine, its rule evaluation loop) over the series k6 runs would have produced at a 15s scrape, and report which alerts fired and when.")
	envPath := cmd.Flag("envelope", "Envelope file the rules were generated from (sets the bucket layout).").Required().String()
	dir := cmd.Flag("rules", "Folder holding the *.rules.yaml files.").Default("rules").String()
	format := cmd.Flag("format", cmdline.Choices("Output format.", "text", "json")).Default("text").Enum("text", "json")
	sel := cmd.Flag("exporter-selector", "Labels of the synthetic up series.").Default(rules.DefaultOptions().ExporterSelector).String()
	var skipSet bool
	skip := cmd.Flag("skip-warmup", "Drop the first D of each run's points (default: the warm-up the envelope skipped; 0 replays the whole run).").IsSetByUser(&skipSet).Duration()
	files := cmd.Arg("file", "k6 NDJSON run files (--out json, .gz allowed).").Required().ExistingFiles()
	cmd.Action(c.Action(func() error {
		env, err := envelope.ReadFile(*envPath)
		if err != nil {
			return err
		}
		warm, err := candidateWarmup(env, *skip, skipSet)
		if err != nil {
			return err
		}
		rf, err := backtest.RuleFiles(*dir)
		if err != nil {
			return err
		}
		rep := &backtest.Report{Runs: []backtest.Run{}}
		for _, f := range *files {
			r, err := backtest.File(context.Background(), env, rf, f, backtest.Options{ExporterSelector: *sel, SkipWarmup: warm})
			if err != nil {
				return err
			}
			rep.Runs = append(rep.Runs, *r)
		}
		if *format == "json" {
			enc := json.NewEncoder(c.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}
		c.Print(rep.Text())
		return nil
	}))
}
