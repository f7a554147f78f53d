package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/backtest"
	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/rules"
)

// backtestCommand adds `envelope backtest`.
func (c *cli) backtestCommand(app *kingpin.Application) {
	cmd := app.Command("backtest", "Evaluate rule files as Prometheus does (its PromQL engine, its rule evaluation loop) over the series k6 runs would have produced at a 15s scrape, and report which alerts fired and when. A run whose series the envelope's match selects none of is judged by nothing: it is named with the tags it carries, and the command exits 2.")
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
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else {
			c.Print(rep.Text())
		}
		return unjudged(env, rep)
	}))
}

// unjudged fails a backtest in which the envelope's match selects none
// of some run's series: no alert firing on such a run is no verdict, so
// the command exits as for bad input, naming the runs.
func unjudged(env *envelope.Envelope, rep *backtest.Report) error {
	var srcs []string
	for _, r := range rep.Runs {
		if r.Unmatched != "" {
			srcs = append(srcs, r.Source)
		}
	}
	if len(srcs) == 0 {
		return nil
	}
	return fmt.Errorf("the envelope's match %s selects none of the series of %s: nothing was judged (the output names the tags each run carries)", env.Match, strings.Join(srcs, ", "))
}
