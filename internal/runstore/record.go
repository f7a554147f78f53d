package runstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
)

// Run is one recorded run's metadata.
type Run struct {
	ID         int64
	Test       string // the envelope's name, the run's envelope tag, or given
	TestID     string
	Commit     string
	CommitTime time.Time // zero when unknown
	Branch     string    // "" when unknown: read as the main line
	Version    string
	RunTime    time.Time // when the run started; zero for summaries
	DurationS  float64
	VUs        int
	SourceFile string
	Format     string
	SHA256     string // of the source file: with TestID, the run's identity
	Note       string
	Excluded   bool
	Reason     string // why it is excluded
	RecordedAt time.Time
}

// Time is the run's place in history: its commit's time, else its run
// time (zero when neither is known).
func (r Run) Time() time.Time {
	if !r.CommitTime.IsZero() {
		return r.CommitTime
	}
	return r.RunTime
}

// Label names a recorded run for people: its source and commit.
func (r Run) Label() string {
	if r.Commit == "" {
		return fmt.Sprintf("run %d (%s)", r.ID, r.SourceFile)
	}
	return fmt.Sprintf("run %d (%s, commit %s)", r.ID, r.SourceFile, r.Commit)
}

// Record is a run with its figures, ready to be stored.
type Record struct {
	Run
	Figures []figures.KeyValue
}

// Added is what recording one run did.
type Added struct {
	ID int64
	// Existing says the run was already recorded (the same testid and
	// content), so nothing was written.
	Existing bool
}

// Add records runs in one transaction: all of them or, on any error,
// none. A run already recorded (same testid and content hash) is left
// as it is and reported Existing, so recording twice is harmless.
func (s *Store) Add(ctx context.Context, recs []Record) ([]Added, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	insRun := s.d.rebind(`INSERT INTO runs (test, testid, content_hash, commit_id, commit_time, branch, version,
  run_time, duration_s, vus, source_file, format, note, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (testid, content_hash) DO NOTHING RETURNING id`)
	now := time.Now().UTC()
	out := make([]Added, 0, len(recs))
	for _, r := range recs {
		if r.SHA256 == "" {
			return nil, fmt.Errorf("%s: no content hash: a run is recorded once by testid and content hash", r.SourceFile)
		}
		var id int64
		err := tx.QueryRowContext(ctx, insRun, r.Test, r.TestID, r.SHA256, r.Commit, s.d.timeArg(r.CommitTime), r.Branch, r.Version,
			s.d.timeArg(r.RunTime), r.DurationS, r.VUs, r.SourceFile, r.Format, r.Note, s.d.timeArg(now)).Scan(&id)
		if errors.Is(err, errNoRows) {
			if err := tx.QueryRowContext(ctx, s.d.rebind("SELECT id FROM runs WHERE testid = ? AND content_hash = ?"), r.TestID, r.SHA256).Scan(&id); err != nil {
				return nil, fmt.Errorf("history %s: %s: %w", s.Where, r.SourceFile, err)
			}
			out = append(out, Added{ID: id, Existing: true})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("history %s: recording %s: %w", s.Where, r.SourceFile, err)
		}
		if err := s.addFigures(ctx, tx, id, r); err != nil {
			return nil, err
		}
		out = append(out, Added{ID: id})
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	return out, nil
}

// figureChunk is how many figures one INSERT writes: few statements per
// run, well within both back ends' limits on parameters.
const figureChunk = 100

// addFigures inserts a run's figures, many rows a statement.
func (s *Store) addFigures(ctx context.Context, tx *sql.Tx, id int64, r Record) error {
	for start := 0; start < len(r.Figures); start += figureChunk {
		chunk := r.Figures[start:min(start+figureChunk, len(r.Figures))]
		var q strings.Builder
		q.WriteString("INSERT INTO figures (run_id, endpoint, figure, value, count, ci_low, ci_high) VALUES ")
		args := make([]any, 0, 7*len(chunk))
		for i, f := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			var lo, hi, n any
			if f.CI != nil {
				lo, hi = f.CI.Low, f.CI.High
			}
			if f.Count > 0 {
				n = f.Count
			}
			args = append(args, id, f.Key.Endpoint, string(f.Key.Figure), f.X, n, lo, hi)
		}
		if _, err := tx.ExecContext(ctx, s.d.rebind(q.String()), args...); err != nil {
			return fmt.Errorf("history %s: recording %s's figures: %w", s.Where, r.SourceFile, err)
		}
	}
	return nil
}
