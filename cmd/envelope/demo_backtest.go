package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/backtest"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/simulate"
)

// demoSimulatedRun is the simulated baseline-like run the backtest step
// writes into the demo folder, which the pages step reports on.
const demoSimulatedRun = "simulated-baseline.ndjson.gz"

// demoErrorsRun is the simulated run with failed requests the backtest
// step writes, which the pages step compares against the envelope.
var demoErrorsRun = filepath.Join("regressed", "simulated-errors.ndjson.gz")

// The embedded runs are summaries without points, so the demo simulates
// one baseline-like run (which the serving step then replays onto
// /metrics) and one run with an injected regression, and backtests both
// against the generated rules: the first must stay silent, the second
// must fire.
func demoBacktest(ctx context.Context, d *demoEnv) error {
	env, err := demo.Envelope()
	if err != nil {
		return err
	}
	ruleFiles, err := backtest.RuleFiles(filepath.Join(d.Dir, "rules"))
	if err != nil {
		return err
	}
	regDir := filepath.Join(d.Dir, "regressed")
	if err := os.MkdirAll(regDir, 0o755); err != nil {
		return err
	}
	runs := []struct {
		path string
		opts simulate.Options
		what string
	}{
		{filepath.Join(d.Dir, demoSimulatedRun),
			simulate.Options{Duration: 6 * time.Minute, Seed: 1, TestID: "demo-baseline"},
			"a simulated baseline-like run"},
		{filepath.Join(d.Dir, demoErrorsRun),
			simulate.Options{Duration: 6 * time.Minute, Seed: 2, TestID: "demo-errors", ErrorRate: 0.01},
			"the same run with 1% failed requests"},
	}
	for _, r := range runs {
		if err := simulate.WriteFile(r.path, env, r.opts); err != nil {
			return err
		}
		res, err := backtest.File(ctx, env, ruleFiles, r.path, backtest.Options{})
		if err != nil {
			return err
		}
		fired := map[string]float64{}
		for _, a := range res.Alerts {
			if t, ok := fired[a.Alertname]; !ok || a.FirstFiringS < t {
				fired[a.Alertname] = a.FirstFiringS
			}
		}
		var names []string
		for n, t := range fired {
			names = append(names, fmt.Sprintf("%s after %.0f s", n, t))
		}
		sort.Strings(names)
		verdict := "no alert fired"
		if len(names) > 0 {
			verdict = "fired " + strings.Join(names, ", ")
		}
		rel, _ := filepath.Rel(d.Dir, r.path)
		d.Printf("backtest: %s (%s): %s\n", r.what, rel, verdict)
	}
	return nil
}
