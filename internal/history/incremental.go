package history

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// maxAppended bounds the runs an incremental analysis appends; more new
// runs than this (an import) are analysed from scratch, which reads them
// in one query anyway.
const maxAppended = 200

// AnalyzeAppended is Analyze for a command that has just recorded runs:
// when the line's stored checkpoint stands for its runs up to the new
// ones, it restores the analysis, appends only the new runs' figures and
// analyses the windows they touch; otherwise (no checkpoint, a run
// recorded out of commit-time order, a run excluded or included, a new
// series, a run of the commit the last point pools, another
// configuration) it analyses from scratch. Either way
// the result is the from-scratch analysis's, and the line's checkpoint
// is stored for the next call. The Analysis's Runs carry each run's id,
// test id and commit only; its analyzer has no drift before its tail.
func AnalyzeAppended(ctx context.Context, s *runstore.Store, l runstore.Line, cfg changepoint.Config) (an *Analysis, appended bool, err error) {
	an, _, appended, err = analyzeAppended(ctx, s, l, cfg, nil)
	return an, appended, err
}

// analyzeAppended is AnalyzeAppended that also gives the analysis before
// the runs fresh (their ids) were recorded: the checkpoint's own result
// when the analysis continues it, else the line analysed without them.
func analyzeAppended(ctx context.Context, s *runstore.Store, l runstore.Line, cfg changepoint.Config, fresh []int64) (an, before *Analysis, appended bool, err error) {
	l.WithExcluded = false
	runs, err := s.LineRefs(ctx, l)
	if err != nil {
		return nil, nil, false, err
	}
	a, count, err := restore(ctx, s, l, runs, cfg)
	if err != nil {
		return nil, nil, false, err
	}
	if a != nil {
		before = &Analysis{Test: l.Test, Runs: runs[:count], Analyzer: a, Result: a.Result()}
		if err := appendRuns(ctx, s, l, a, runs, count); err != nil {
			if !errors.Is(err, changepoint.ErrCheckpoint) {
				return nil, nil, false, err
			}
			a, before = nil, nil
		}
	}
	var res changepoint.Result
	if a == nil {
		full, err := Analyze(ctx, s, l, cfg)
		if err != nil {
			return nil, nil, false, err
		}
		// The runs the analysis read (a run recorded since LineRefs is
		// among them).
		a, res, runs, count = full.Analyzer, full.Result, full.Runs, 0
	} else {
		res = a.Result()
	}
	if err := saveCheckpoint(ctx, s, l, runs, a); err != nil {
		return nil, nil, false, err
	}
	if before == nil && fresh != nil {
		if before, err = analyzeWithout(ctx, s, l, cfg, fresh); err != nil {
			return nil, nil, false, err
		}
	}
	return &Analysis{Test: l.Test, Runs: runs, Analyzer: a, Result: res}, before, count > 0, nil
}

// lineHash identifies the first n runs of a line: their ids in order.
func lineHash(runs []runstore.Run) string {
	h := sha256.New()
	var b [8]byte
	for _, r := range runs {
		binary.BigEndian.PutUint64(b[:], uint64(r.ID))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// restore is the line's checkpointed analyzer and the number of runs it
// stands for, nil when there is none that the line's runs continue (or
// it was made with another configuration, or a restore fails: the
// analysis then starts over).
func restore(ctx context.Context, s *runstore.Store, l runstore.Line, runs []runstore.Run, cfg changepoint.Config) (*changepoint.Analyzer, int, error) {
	cp, ok, err := s.LoadCheckpoint(ctx, l)
	switch {
	case err != nil:
		return nil, 0, err
	case !ok || cp.Runs < 1 || cp.Runs > len(runs) || len(runs)-cp.Runs > maxAppended || lineHash(runs[:cp.Runs]) != cp.LineHash:
		return nil, 0, nil
	}
	a, err := changepoint.Restore(cp.State)
	if err != nil {
		return nil, 0, nil //nolint:nilerr // a damaged checkpoint is analysed from scratch and replaced
	}
	want, err := changepoint.New(cfg)
	if err != nil {
		return nil, 0, err
	}
	if a.Config() != want.Config() {
		return nil, 0, nil
	}
	return a, cp.Runs, nil
}

// appendRuns appends the figures of the line's runs after the first
// count to a, series by series in the analyzer's order; a series the
// analyzer lacks is refused with changepoint.ErrCheckpoint (the family,
// and its order, change: the analysis starts over).
func appendRuns(ctx context.Context, s *runstore.Store, l runstore.Line, a *changepoint.Analyzer, runs []runstore.Run, count int) error {
	if count == len(runs) {
		return nil
	}
	if c := runs[count].Commit; c != "" && c == runs[count-1].Commit {
		// A run of the commit the last point pools: that point changes.
		return fmt.Errorf("run %d repeats commit %s: %w", count+1, c, changepoint.ErrCheckpoint)
	}
	ids := make([]int64, 0, len(runs)-count)
	for _, r := range runs[count:] {
		ids = append(ids, r.ID)
	}
	figs, err := lineFigures(ctx, s, l, runs, ids)
	if err != nil {
		return err
	}
	known := map[figures.Key]bool{}
	for _, k := range a.Keys() {
		known[k.Figures()] = true
	}
	for k := range figs {
		if !known[k] {
			return fmt.Errorf("series %s is new: %w", k, changepoint.ErrCheckpoint)
		}
	}
	for _, k := range a.Keys() {
		for _, r := range pool(figs[k.Figures()], runs) {
			if err := a.Append(k, k.Figure.Def().Polarity, r); err != nil {
				return fmt.Errorf("history %s: %w", s.Where, err)
			}
		}
	}
	return nil
}

// saveCheckpoint stores a's checkpoint as the line's, standing for runs.
func saveCheckpoint(ctx context.Context, s *runstore.Store, l runstore.Line, runs []runstore.Run, a *changepoint.Analyzer) error {
	if len(runs) == 0 {
		return nil
	}
	data, err := a.Checkpoint()
	if err != nil {
		return fmt.Errorf("history %s: %w", s.Where, err)
	}
	return s.SaveCheckpoint(ctx, l, runstore.Checkpoint{Runs: len(runs), LineHash: lineHash(runs), State: data})
}

// PreviewChanges is what `history record` reports after storing runs
// (fresh: the ids of the runs it stored): how the line's change points
// differ from the analysis before them, with the stored lifecycle (none
// stored as reported), and the outlier runs among the fresh ones.
func PreviewChanges(ctx context.Context, s *runstore.Store, l runstore.Line, fresh []int64) (*RunChanges, error) {
	if fresh == nil {
		fresh = []int64{}
	}
	an, before, _, err := analyzeAppended(ctx, s, l, changepoint.Config{}, fresh)
	if err != nil {
		return nil, err
	}
	if len(an.Runs) == 0 {
		return nil, fmt.Errorf("history %s: test %s has no run on the main line (history list and history branches show what it holds)", s.Where, l.Test)
	}
	stored, err := s.StoredChanges(ctx, l.Test)
	if err != nil {
		return nil, err
	}
	return an.Since(before, stored, fresh), nil
}
