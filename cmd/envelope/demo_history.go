package main

import (
	"context"
	"path/filepath"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/history"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// demoHistoryFigure is the figure the demo shows across commits: the
// upload endpoint's median, which rises at the eleventh commit (its
// p95, from about 60 requests a run, is not analysed).
const demoHistoryFigure = "document_upload.median"

// demoHistory records the 30 embedded runs of one test, one per commit,
// into a run history in the output folder, shows one figure across them,
// as `history show` does, and the change points and outlier runs of every
// figure, as `history changes` does. The demo does not store them as
// reported, so the user's own `history changes` on the file still shows
// them as new.
func demoHistory(ctx context.Context, d *demoEnv) error {
	in, commits, err := demo.HistoryInputs()
	if err != nil {
		return err
	}
	recs := make([]runstore.Record, len(in))
	for i := range in {
		if recs[i], err = runstore.FromRun(in[i], runstore.Meta{Test: demo.HistoryTest, Commit: commits[i], Branch: runstore.DefaultMainBranch}); err != nil {
			return err
		}
	}
	path := filepath.Join(d.Dir, runstore.DefaultDSN)
	s, err := runstore.Open(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close() //nolint:errcheck // the commit said whether it landed
	if _, err := s.Add(ctx, recs); err != nil {
		return err
	}
	k, err := figures.ParseKey(demoHistoryFigure)
	if err != nil {
		return err
	}
	pts, err := s.Series(ctx, runstore.Line{Test: demo.HistoryTest}, k)
	if err != nil {
		return err
	}
	d.Printf("history: %d runs of %s, one per commit, recorded in %s; `envelope history --history %s show --figure %s`:\n",
		len(recs), demo.HistoryTest, path, path, demoHistoryFigure)
	if err := (history.SeriesView{Test: demo.HistoryTest, Endpoint: k.Endpoint, Figure: k.Figure, Points: pts}).Write(d.Stdout, "text"); err != nil {
		return err
	}
	rep, err := analyseStore(ctx, s, runstore.Line{Test: demo.HistoryTest}, "", nil, nil, false)
	if err != nil {
		return err
	}
	// What the runs were made with: the upload slower from c11, one slow
	// actor_get run (c20), the slow auth path faster from c23.
	d.Printf("history changes: every figure of the %d runs, made with the upload 20%% slower from c11, one run (c20) with actor_get 60%% slower, the slow auth path 10%% faster from c23; `envelope history --history %s changes`:\n", len(recs), path)
	return rep.WriteText(d.Stdout)
}
