package history

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/changepoint"
)

// Status is a change point's place in its lifecycle.
type Status string

// The statuses: a change is new until someone says what it is.
const (
	StatusNew           Status = "new"
	StatusAcknowledged  Status = "acknowledged"
	StatusExpected      Status = "expected"
	StatusFalsePositive Status = "false_positive"
	StatusFixed         Status = "fixed"
)

// AckStatuses are the statuses `history ack` sets; a fresh slice each
// call.
func AckStatuses() []string {
	return []string{string(StatusAcknowledged), string(StatusExpected), string(StatusFalsePositive), string(StatusFixed)}
}

// Accepted says the status makes the change the line's new level: an
// acknowledged or expected change is one a re-baseline starts after.
func (s Status) Accepted() bool { return s == StatusAcknowledged || s == StatusExpected }

// StoredChange is a change point as first reported, with its status.
type StoredChange struct {
	ID       string
	Test     string
	Figure   string
	Endpoint string
	Commit   string
	TestID   string
	// RunIndex is the change's run's 1-based place in the line when it
	// was first reported.
	RunIndex      int
	Direction     changepoint.Direction
	Before, After float64
	Status        Status
	Note          string
	FirstReported time.Time
	Updated       time.Time
}

const changeColumns = `id, test, figure, endpoint, commit_id, testid, run_index, direction, before_value, after_value,
  status, note, first_reported, updated_at`

func scanChange(sc interface{ Scan(...any) error }) (StoredChange, error) {
	var c StoredChange
	var dir, status string
	err := sc.Scan(&c.ID, &c.Test, &c.Figure, &c.Endpoint, &c.Commit, &c.TestID, &c.RunIndex, &dir, &c.Before, &c.After,
		&status, &c.Note, scanTime{&c.FirstReported}, scanTime{&c.Updated})
	c.Direction, c.Status = changepoint.Direction(dir), Status(status)
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

// ReportChanges stores change points as reported (status new) and says
// which of them this call stored first: a change another call stored
// already, even at the same moment, is not reported again.
func (s *Store) ReportChanges(ctx context.Context, cs []StoredChange) ([]bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	ins := s.d.rebind(`INSERT INTO changes (` + changeColumns + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`)
	now := s.d.timeArg(time.Now().UTC())
	first := make([]bool, len(cs))
	for i, c := range cs {
		res, err := tx.ExecContext(ctx, ins, c.ID, c.Test, c.Figure, c.Endpoint, c.Commit, c.TestID, c.RunIndex, string(c.Direction),
			c.Before, c.After, string(StatusNew), "", now, now)
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

// ParseStatus reads a status `history ack` may set.
func ParseStatus(v string) (Status, error) {
	if !slices.Contains(AckStatuses(), v) {
		return "", fmt.Errorf("status %q: want one of %s", v, strings.Join(AckStatuses(), ", "))
	}
	return Status(v), nil
}

// Ack sets a reported change point's status and note.
func (s *Store) Ack(ctx context.Context, id string, status Status, note string) (StoredChange, error) {
	if _, err := ParseStatus(string(status)); err != nil {
		return StoredChange{}, err
	}
	res, err := s.db.ExecContext(ctx, s.d.rebind("UPDATE changes SET status = ?, note = ?, updated_at = ? WHERE id = ?"),
		string(status), note, s.d.timeArg(time.Now().UTC()), id)
	if err != nil {
		return StoredChange{}, fmt.Errorf("history %s: %w", s.Where, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return StoredChange{}, fmt.Errorf("history %s: no reported change point %s (give an id as history changes shows it)", s.Where, id)
	}
	c, err := scanChange(s.db.QueryRowContext(ctx, s.d.rebind("SELECT "+changeColumns+" FROM changes WHERE id = ?"), id))
	if err != nil {
		return StoredChange{}, fmt.Errorf("history %s: %w", s.Where, err)
	}
	return c, nil
}
