package runstore

import (
	"context"
	"fmt"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
)

// StoredChange is a change point as first reported, with the status
// someone gave it since. Its direction and status are kept as the
// analysis names them (internal/changepoint, internal/history).
type StoredChange struct {
	ID       string
	Test     string
	Figure   figures.Name
	Endpoint string
	Commit   string
	TestID   string
	// RunIndex is the change's run's 1-based place in the line when it
	// was first reported.
	RunIndex      int
	Direction     string
	Before, After float64
	// Status is "new" (the schema's default) until Ack sets another.
	Status        string
	Note          string
	FirstReported time.Time
	Updated       time.Time
}

const changeColumns = `id, test, figure, endpoint, commit_id, testid, run_index, direction, before_value, after_value,
  status, note, first_reported, updated_at`

func scanChange(sc interface{ Scan(...any) error }) (StoredChange, error) {
	var c StoredChange
	err := sc.Scan(&c.ID, &c.Test, &c.Figure, &c.Endpoint, &c.Commit, &c.TestID, &c.RunIndex, &c.Direction, &c.Before, &c.After,
		&c.Status, &c.Note, scanTime{&c.FirstReported}, scanTime{&c.Updated})
	return c, err
}

// StoredChanges lists a test's reported change points, in the order they
// were first reported.
func (s *Store) StoredChanges(ctx context.Context, test string) ([]StoredChange, error) {
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT "+changeColumns+" FROM changes WHERE test = ? ORDER BY first_reported, id"), test)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	var out []StoredChange
	for rows.Next() {
		c, err := scanChange(rows)
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// MarkReported stores change points as reported, with the schema's
// status (new) and no note, and says which of them this call stored
// first: a change another call stored already, even at the same moment,
// is not reported again. Each change's Status and Note are not read.
func (s *Store) MarkReported(ctx context.Context, cs []StoredChange) ([]bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	ins := s.d.rebind(`INSERT INTO changes (id, test, figure, endpoint, commit_id, testid, run_index, direction, before_value, after_value,
  first_reported, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`)
	now := s.d.timeArg(time.Now().UTC())
	first := make([]bool, len(cs))
	for i, c := range cs {
		res, err := tx.ExecContext(ctx, ins, c.ID, c.Test, c.Figure, c.Endpoint, c.Commit, c.TestID, c.RunIndex, c.Direction,
			c.Before, c.After, now, now)
		if err != nil {
			return nil, fmt.Errorf("history %s: storing change %s: %w", s.Where, c.ID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		first[i] = n == 1
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	return first, nil
}

// Ack sets reported change points' status and note, all or none: an id
// no change has fails the whole call, naming it. Which statuses a change
// may be given is the caller's to check (history.ParseStatus). The
// changes are returned as stored, in the order of ids.
func (s *Store) Ack(ctx context.Context, ids []string, status, note string) ([]StoredChange, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("history %s: no change point to set", s.Where)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	upd := s.d.rebind("UPDATE changes SET status = ?, note = ?, updated_at = ? WHERE id = ?")
	sel := s.d.rebind("SELECT " + changeColumns + " FROM changes WHERE id = ?")
	now := s.d.timeArg(time.Now().UTC())
	out := make([]StoredChange, 0, len(ids))
	for _, id := range ids {
		res, err := tx.ExecContext(ctx, upd, status, note, now, id)
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return nil, fmt.Errorf("history %s: no reported change point %s (give an id as history changes shows it); none set", s.Where, id)
		}
		c, err := scanChange(tx.QueryRowContext(ctx, sel, id))
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		out = append(out, c)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	return out, nil
}
