package history

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/changepoint"
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
// series, another configuration) it analyses from scratch. Either way
// the result is the from-scratch analysis's, and the line's checkpoint
// is stored for the next call. The Analysis's Runs carry each run's id,
// test id and commit only; its analyzer has no drift before its tail.
func (s *Store) AnalyzeAppended(ctx context.Context, l Line, cfg changepoint.Config) (an *Analysis, appended bool, err error) {
	l.WithExcluded = false
	runs, err := s.lineRefs(ctx, l)
	if err != nil {
		return nil, false, err
	}
	lineName := "main:" + l.mainBranch()
	if !l.onMain() {
		lineName = "branch:" + l.Branch
	}
	a, count, err := s.restore(ctx, l.Test, lineName, runs, cfg)
	if err != nil {
		return nil, false, err
	}
	if a != nil {
		if err := s.appendRuns(ctx, l, a, runs, count); err != nil {
			if !errors.Is(err, changepoint.ErrCheckpoint) {
				return nil, false, err
			}
			a = nil
		}
	}
	var res changepoint.Result
	if a == nil {
		full, err := s.Analyze(ctx, l, cfg)
		if err != nil {
			return nil, false, err
		}
		// The runs the analysis read (a run recorded since lineRefs is
		// among them).
		a, res, runs, count = full.Analyzer, full.Result, full.Runs, 0
	} else {
		res = a.Result()
	}
	if err := s.saveCheckpoint(ctx, l.Test, lineName, runs, a); err != nil {
		return nil, false, err
	}
	return &Analysis{Test: l.Test, Runs: runs, Analyzer: a, Result: res}, count > 0, nil
}

// lineRefs are a line's runs in commit-time order, each with its id,
// test id and commit only.
func (s *Store) lineRefs(ctx context.Context, l Line) ([]Run, error) {
	cond, args := l.where()
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT r.id, r.testid, r.commit_id FROM runs r WHERE "+cond+" ORDER BY "+historyOrder), args...)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	var out []Run
	for rows.Next() {
		r := Run{Test: l.Test}
		if err := rows.Scan(&r.ID, &r.TestID, &r.Commit); err != nil {
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	return out, nil
}

// lineHash identifies the first n runs of a line: their ids in order.
func lineHash(runs []Run) string {
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
func (s *Store) restore(ctx context.Context, test, line string, runs []Run, cfg changepoint.Config) (*changepoint.Analyzer, int, error) {
	var count int
	var hash string
	var data []byte
	err := s.db.QueryRowContext(ctx, s.d.rebind("SELECT run_count, line_hash, state FROM analysis_state WHERE test = ? AND line = ?"), test, line).Scan(&count, &hash, &data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("history %s: reading the analysis checkpoint: %w", s.Where, err)
	case count < 1 || count > len(runs) || len(runs)-count > maxAppended || lineHash(runs[:count]) != hash:
		return nil, 0, nil
	}
	a, err := changepoint.Restore(data)
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
	return a, count, nil
}

// appendRuns appends the figures of the line's runs after the first
// count to a, series by series in the analyzer's order; a series the
// analyzer lacks is refused with changepoint.ErrCheckpoint (the family,
// and its order, change: the analysis starts over).
func (s *Store) appendRuns(ctx context.Context, l Line, a *changepoint.Analyzer, runs []Run, count int) error {
	if count == len(runs) {
		return nil
	}
	ids := make([]string, 0, len(runs)-count)
	args := []any{}
	for _, r := range runs[count:] {
		ids = append(ids, "?")
		args = append(args, r.ID)
	}
	figs, err := s.lineFiguresWhere(ctx, l, runs, "r.id IN ("+strings.Join(ids, ", ")+")", args)
	if err != nil {
		return err
	}
	known := map[SeriesKey]bool{}
	for _, k := range a.Keys() {
		known[SeriesKey{Endpoint: k.Endpoint, Figure: k.Figure}] = true
	}
	for k := range figs {
		if !known[k] {
			return fmt.Errorf("series %s.%s is new: %w", k.Endpoint, k.Figure, changepoint.ErrCheckpoint)
		}
	}
	for _, k := range a.Keys() {
		for _, r := range figs[SeriesKey{Endpoint: k.Endpoint, Figure: k.Figure}] {
			if err := a.Append(k, changepoint.FigurePolarity(k.Figure), r); err != nil {
				return fmt.Errorf("history %s: %w", s.Where, err)
			}
		}
	}
	return nil
}

// saveCheckpoint stores a's checkpoint as the line's, standing for runs.
func (s *Store) saveCheckpoint(ctx context.Context, test, line string, runs []Run, a *changepoint.Analyzer) error {
	if len(runs) == 0 {
		return nil
	}
	data, err := a.Checkpoint()
	if err != nil {
		return fmt.Errorf("history %s: %w", s.Where, err)
	}
	_, err = s.db.ExecContext(ctx, s.d.rebind(`INSERT INTO analysis_state (test, line, run_count, line_hash, state, updated_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (test, line) DO UPDATE SET run_count = excluded.run_count, line_hash = excluded.line_hash, state = excluded.state, updated_at = excluded.updated_at`),
		test, line, len(runs), lineHash(runs), data, s.d.timeArg(time.Now()))
	if err != nil {
		return fmt.Errorf("history %s: storing the analysis checkpoint: %w", s.Where, err)
	}
	return nil
}

// PreviewChanges is what `history record` reports after storing runs:
// the line's change points with their stored lifecycle (none stored as
// reported) and its outlier runs, from AnalyzeAppended, without drift.
func (s *Store) PreviewChanges(ctx context.Context, l Line) (*ChangesReport, error) {
	an, _, err := s.AnalyzeAppended(ctx, l, changepoint.Config{})
	if err != nil {
		return nil, err
	}
	if len(an.Runs) == 0 {
		return nil, fmt.Errorf("history %s: test %s has no run on the main line (history list and history branches show what it holds)", s.Where, l.Test)
	}
	return an.Report(ctx, s, 1, nil, false)
}
