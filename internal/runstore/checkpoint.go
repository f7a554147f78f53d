package runstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Checkpoint is a line's change-point analysis as stored: State stands
// for the line's first Runs runs in commit-time order, whose ids hash to
// LineHash. What State holds and when it still stands is the analysis's.
type Checkpoint struct {
	Runs     int
	LineHash string
	State    []byte
}

// checkpointName is the line's key among its test's checkpoints: the
// main line by its main branch, else the branch.
func (l Line) checkpointName() string {
	if l.onMain() {
		return "main:" + l.mainBranch()
	}
	return "branch:" + l.Branch
}

// LoadCheckpoint reads the line's stored checkpoint; false when it has
// none.
func (s *Store) LoadCheckpoint(ctx context.Context, l Line) (Checkpoint, bool, error) {
	var cp Checkpoint
	err := s.db.QueryRowContext(ctx, s.d.rebind("SELECT run_count, line_hash, state FROM analysis_state WHERE test = ? AND line = ?"),
		l.Test, l.checkpointName()).Scan(&cp.Runs, &cp.LineHash, &cp.State)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Checkpoint{}, false, nil
	case err != nil:
		return Checkpoint{}, false, fmt.Errorf("history %s: reading the analysis checkpoint: %w", s.Where, err)
	}
	return cp, true, nil
}

// SaveCheckpoint stores cp as the line's checkpoint, in place of any
// earlier one.
func (s *Store) SaveCheckpoint(ctx context.Context, l Line, cp Checkpoint) error {
	_, err := s.db.ExecContext(ctx, s.d.rebind(`INSERT INTO analysis_state (test, line, run_count, line_hash, state, updated_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (test, line) DO UPDATE SET run_count = excluded.run_count, line_hash = excluded.line_hash, state = excluded.state, updated_at = excluded.updated_at`),
		l.Test, l.checkpointName(), cp.Runs, cp.LineHash, cp.State, s.d.timeArg(time.Now()))
	if err != nil {
		return fmt.Errorf("history %s: storing the analysis checkpoint: %w", s.Where, err)
	}
	return nil
}
