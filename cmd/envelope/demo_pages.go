package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/page"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// demoPages writes the self-contained HTML page of every report the demo
// makes and prints where they are: the envelope report's (beside
// report.md), the comparison of the last two sample runs (compare.html),
// the stage report of the simulated run (stage-report.html) and the run
// history's report (history-report.html). The stage and history reports
// are made by their commands, as a user would run them on the files the
// earlier steps wrote.
func demoPages(_ context.Context, d *demoEnv) error {
	env, err := demo.Envelope()
	if err != nil {
		return err
	}
	envPage, err := writePageBeside(filepath.Join(d.Dir, "report.md"), page.Info, envelopeVerdict(env))
	if err != nil {
		return err
	}
	// The compare page judges the simulated run with failed requests
	// (the backtest step wrote it): a point stream, so the page shows it
	// over time against the envelope's bands, as a user's candidate.
	skip, err := candidateWarmup(env, 0, false)
	if err != nil {
		return err
	}
	runs, err := loadCandidates([]string{filepath.Join(d.Dir, demoErrorsRun)}, figures.LoadOptions(skip, env.Provenance.GroupBy), false)
	if err != nil {
		return err
	}
	// Named as in the demo folder, so the page reads the same wherever
	// the folder is.
	runs[0].Source = demoErrorsRun
	res, err := compare.Compare(env, runs, compare.Options{SkipWarmup: skip})
	if err != nil {
		return err
	}
	doc, err := comparePage(comparison{res: res, env: env, runs: runs, window: windowLine(skip, false)})
	if err != nil {
		return err
	}
	cmpPage := filepath.Join(d.Dir, "compare.html")
	if err := page.WriteFile(cmpPage, doc); err != nil {
		return err
	}
	// The stage windows come from the script's `k6 inspect` options, which
	// the demo embeds; the file lets the printed command be run again.
	opts, err := fs.ReadFile(demo.FS(), "k6-options.json")
	if err != nil {
		return err
	}
	optsPath := filepath.Join(d.Dir, "k6-options.json")
	if err := os.WriteFile(optsPath, opts, 0o644); err != nil {
		return err
	}
	stageMD := filepath.Join(d.Dir, "stage-report.md")
	if err := d.runQuiet("report", "--k6-options", optsPath, "--out", stageMD, filepath.Join(d.Dir, demoSimulatedRun)); err != nil {
		return err
	}
	histMD := filepath.Join(d.Dir, "history-report.md")
	if err := d.runQuiet("history", "--history", filepath.Join(d.Dir, runstore.DefaultDSN), "--test", demo.HistoryTest, "report", "--out", histMD); err != nil {
		return err
	}
	d.Printf("pages: one self-contained HTML file per report (charts inline, no network needed):\n")
	for _, p := range []string{envPage, cmpPage, pageBeside(stageMD), pageBeside(histMD)} {
		d.Printf("  %s\n", p)
	}
	return nil
}

// runQuiet runs an envelope command as a user would, keeping its stdout
// for the error when it fails; its warnings go to the demo's stderr.
func (d *demoEnv) runQuiet(args ...string) error {
	var out bytes.Buffer
	if code := d.Run(args, &out, d.Stderr); code != 0 {
		return fmt.Errorf("envelope %v: exit %d: %s", args, code, out.String())
	}
	return nil
}
