package runstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
)

var errNoRows = sql.ErrNoRows

// DefaultMainBranch is the main line's branch when none is given.
const DefaultMainBranch = "main"

// scanTime reads a time column of either back end: PostgreSQL gives a
// time.Time, SQLite the fixed-width text timeArg wrote.
type scanTime struct{ t *time.Time }

func (s scanTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*s.t = time.Time{}
	case time.Time:
		*s.t = x.UTC()
	case string:
		return s.parse(x)
	case []byte:
		return s.parse(string(x))
	default:
		return fmt.Errorf("time column holds a %T", v)
	}
	return nil
}

func (s scanTime) parse(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("time column holds %q: %w", v, err)
	}
	*s.t = t.UTC()
	return nil
}

// Line selects the runs of one line of history: a test's main line (the
// main branch and runs of no known branch) or one branch's runs.
type Line struct {
	Test string
	// Branch is the branch to read; "" reads the main line.
	Branch string
	// MainBranch names the main line's branch; "" is DefaultMainBranch.
	MainBranch string
	// WithExcluded keeps excluded runs (shown, marked); analysis leaves
	// them out.
	WithExcluded bool
}

// mainBranch is the main line's branch, the default resolved.
func (l Line) mainBranch() string {
	if l.MainBranch == "" {
		return DefaultMainBranch
	}
	return l.MainBranch
}

// onMain reports whether the line is the main line: no branch given, or
// the main branch.
func (l Line) onMain() bool { return l.Branch == "" || l.Branch == l.mainBranch() }

// where is the line's SQL condition on runs r, with its arguments.
func (l Line) where() (string, []any) {
	conds := []string{"r.test = ?"}
	args := []any{l.Test}
	if l.onMain() {
		conds = append(conds, "(r.branch = ? OR r.branch = '')")
		args = append(args, l.mainBranch())
	} else {
		conds = append(conds, "r.branch = ?")
		args = append(args, l.Branch)
	}
	if !l.WithExcluded {
		conds = append(conds, "NOT r.excluded")
	}
	return strings.Join(conds, " AND "), args
}

// historyOrder is commit-time order: a run's commit time, else its run
// time; runs with neither come last, in recording order.
const historyOrder = "COALESCE(r.commit_time, r.run_time) IS NULL, COALESCE(r.commit_time, r.run_time), r.id"

const runColumns = `r.id, r.test, r.testid, r.commit_id, r.commit_time, r.branch, r.version, r.run_time,
  r.duration_s, r.vus, r.source_file, r.format, r.content_hash, r.note, r.excluded, r.exclude_reason, r.recorded_at`

// scanRun reads runColumns.
func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var dur sql.NullFloat64
	var vus sql.NullInt64
	err := sc.Scan(&r.ID, &r.Test, &r.TestID, &r.Commit, scanTime{&r.CommitTime}, &r.Branch, &r.Version, scanTime{&r.RunTime},
		&dur, &vus, &r.SourceFile, &r.Format, &r.SHA256, &r.Note, &r.Excluded, &r.Reason, scanTime{&r.RecordedAt})
	r.DurationS, r.VUs = dur.Float64, int(vus.Int64)
	return r, err
}

// Runs lists a line's runs in commit-time order.
func (s *Store) Runs(ctx context.Context, l Line) ([]Run, error) {
	cond, args := l.where()
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT "+runColumns+" FROM runs r WHERE "+cond+" ORDER BY "+historyOrder), args...)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// LineRefs lists a line's runs in commit-time order, each with its id,
// test id and commit only: what places a run in the line.
func (s *Store) LineRefs(ctx context.Context, l Line) ([]Run, error) {
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

// LineFigure is one figure of one of a line's runs.
type LineFigure struct {
	RunID  int64
	Series figures.Key
	Value  float64
	Count  int64 // 0 when unknown
	// Low and High are the figure's order-statistic interval; both 0
	// when it has none.
	Low, High float64
}

// LineFigures reads every figure of a line's runs in one query, in no
// particular order, and hands each to each; given run ids (only), just
// the figures of those of the line's runs.
func (s *Store) LineFigures(ctx context.Context, l Line, only []int64, each func(LineFigure)) error {
	cond, args := l.where()
	if len(only) > 0 {
		marks := make([]string, len(only))
		for i, id := range only {
			marks[i] = "?"
			args = append(args, id)
		}
		cond += " AND r.id IN (" + strings.Join(marks, ", ") + ")"
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT f.run_id, f.endpoint, f.figure, f.value, f.count, f.ci_low, f.ci_high
FROM figures f JOIN runs r ON r.id = f.run_id WHERE `+cond), args...)
	if err != nil {
		return fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	for rows.Next() {
		var f LineFigure
		var n sql.NullInt64
		var lo, hi sql.NullFloat64
		if err := rows.Scan(&f.RunID, &f.Series.Endpoint, &f.Series.Figure, &f.Value, &n, &lo, &hi); err != nil {
			return fmt.Errorf("history %s: %w", s.Where, err)
		}
		f.Count = n.Int64
		if lo.Valid && hi.Valid {
			f.Low, f.High = lo.Float64, hi.Float64
		}
		each(f)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("history %s: %w", s.Where, err)
	}
	return nil
}

// Point is one run's value of a figure, with what change-point
// detection weighs it by: its sample count and order-statistic interval.
type Point struct {
	// Index is the point's 1-based place in the series.
	Index int
	Run   Run
	Value float64
	Count int64             // 0 when unknown
	CI    *figures.Interval // nil unless the run had points
}

// Series reads one figure of a line, in commit-time order: endpoint ""
// for an aggregate figure. Each point's Run holds only what places it:
// ID, TestID, Commit, Branch, CommitTime, RunTime, Excluded and Reason.
func (s *Store) Series(ctx context.Context, l Line, k figures.Key) ([]Point, error) {
	cond, args := l.where()
	q := `SELECT r.id, r.testid, r.commit_id, r.branch, r.commit_time, r.run_time, r.excluded, r.exclude_reason,
  f.value, f.count, f.ci_low, f.ci_high
FROM figures f JOIN runs r ON r.id = f.run_id
WHERE f.figure = ? AND f.endpoint = ? AND ` + cond
	// Sorted here rather than by the database: cheaper than SQLite's
	// sorter for a long series, and the same order (historyLess).
	rows, err := s.db.QueryContext(ctx, s.d.rebind(q), append([]any{string(k.Figure), k.Endpoint}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	var out []Point
	for rows.Next() {
		var p Point
		var n sql.NullInt64
		var lo, hi sql.NullFloat64
		r := &p.Run
		if err := rows.Scan(&r.ID, &r.TestID, &r.Commit, &r.Branch, scanTime{&r.CommitTime}, scanTime{&r.RunTime}, &r.Excluded, &r.Reason,
			&p.Value, &n, &lo, &hi); err != nil {
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		r.Test = l.Test
		p.Count = n.Int64
		if lo.Valid && hi.Valid {
			p.CI = &figures.Interval{Low: lo.Float64, High: hi.Float64}
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Point) int { return historyCompare(a.Run, b.Run) })
	for i := range out {
		out[i].Index = i + 1
	}
	return out, nil
}

// historyCompare is historyOrder in Go: by commit time, else run time;
// runs with neither last; then by id.
func historyCompare(a, b Run) int {
	ta, tb := a.Time(), b.Time()
	switch {
	case ta.IsZero() != tb.IsZero():
		if ta.IsZero() {
			return 1
		}
		return -1
	case !ta.Equal(tb):
		return ta.Compare(tb)
	}
	return cmp.Compare(a.ID, b.ID)
}

// SeriesKeys lists every series a test's runs have, aggregate first,
// then by endpoint, each in figures.Names order.
func (s *Store) SeriesKeys(ctx context.Context, test string) ([]figures.Key, error) {
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT DISTINCT f.endpoint, f.figure FROM figures f JOIN runs r ON r.id = f.run_id WHERE r.test = ?`), test)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	var out []figures.Key
	for rows.Next() {
		var k figures.Key
		if err := rows.Scan(&k.Endpoint, &k.Figure); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	names := figures.Names()
	slices.SortFunc(out, func(a, b figures.Key) int {
		if c := cmp.Compare(a.Endpoint, b.Endpoint); c != 0 {
			return c
		}
		return cmp.Compare(slices.Index(names, a.Figure), slices.Index(names, b.Figure))
	})
	return out, rows.Err()
}

// Tests lists the tests the history holds, by name.
func (s *Store) Tests(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT DISTINCT test FROM runs ORDER BY test")
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Branch is one branch's runs of a test.
type Branch struct {
	Name   string // "" for runs of no known branch
	Runs   int
	Latest time.Time // the latest run's commit or run time
}

// Branches lists the branches a test's runs were recorded on.
func (s *Store) Branches(ctx context.Context, test string) ([]Branch, error) {
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT r.branch, COUNT(*), MAX(COALESCE(r.commit_time, r.run_time))
FROM runs r WHERE r.test = ? GROUP BY r.branch ORDER BY r.branch`), test)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	var out []Branch
	for rows.Next() {
		var b Branch
		if err := rows.Scan(&b.Name, &b.Runs, scanTime{&b.Latest}); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// Exclude marks a run as left out of analysis (kept and shown), with why;
// Include undoes it. ref is a run's id or its testid.
func (s *Store) Exclude(ctx context.Context, ref, reason string) (Run, error) {
	if strings.TrimSpace(reason) == "" {
		return Run{}, fmt.Errorf("excluding run %s: give a reason", ref)
	}
	return s.setExcluded(ctx, ref, true, reason)
}

// Include puts an excluded run back into analysis.
func (s *Store) Include(ctx context.Context, ref string) (Run, error) {
	return s.setExcluded(ctx, ref, false, "")
}

func (s *Store) setExcluded(ctx context.Context, ref string, excluded bool, reason string) (Run, error) {
	r, err := s.Find(ctx, ref)
	if err != nil {
		return Run{}, err
	}
	if _, err := s.db.ExecContext(ctx, s.d.rebind("UPDATE runs SET excluded = ?, exclude_reason = ? WHERE id = ?"), excluded, reason, r.ID); err != nil {
		return Run{}, fmt.Errorf("history %s: %w", s.Where, err)
	}
	r.Excluded, r.Reason = excluded, reason
	return r, nil
}

// Find finds one run by its id or its testid; a testid several runs
// share is refused with their ids.
func (s *Store) Find(ctx context.Context, ref string) (Run, error) {
	cond, arg := "r.testid = ?", any(ref)
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		cond, arg = "(r.id = ? OR r.testid = ?)", id
	}
	args := []any{arg}
	if strings.Contains(cond, "OR") {
		args = append(args, ref)
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT "+runColumns+" FROM runs r WHERE "+cond+" ORDER BY r.id"), args...)
	if err != nil {
		return Run{}, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	var found []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return Run{}, err
		}
		found = append(found, r)
	}
	if err := rows.Err(); err != nil {
		return Run{}, err
	}
	switch len(found) {
	case 0:
		return Run{}, fmt.Errorf("history %s: no run %s (give a run's id or testid, as history list shows them)", s.Where, ref)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, r := range found {
		ids[i] = strconv.FormatInt(r.ID, 10)
	}
	return Run{}, fmt.Errorf("history %s: %d runs match %s (ids %s): give the id", s.Where, len(found), ref, strings.Join(ids, ", "))
}

// figureRows reads every figure of the given runs, by run id.
func (s *Store) figureRows(ctx context.Context, runs []Run) (map[int64][]figures.KeyValue, error) {
	out := map[int64][]figures.KeyValue{}
	if len(runs) == 0 {
		return out, nil
	}
	ids := make([]any, len(runs))
	marks := make([]string, len(runs))
	for i, r := range runs {
		ids[i], marks[i] = r.ID, "?"
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT run_id, endpoint, figure, value, count, ci_low, ci_high FROM figures WHERE run_id IN ("+strings.Join(marks, ", ")+")"), ids...)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	for rows.Next() {
		var id int64
		var f figures.KeyValue
		var n sql.NullInt64
		var lo, hi sql.NullFloat64
		if err := rows.Scan(&id, &f.Key.Endpoint, &f.Key.Figure, &f.X, &n, &lo, &hi); err != nil {
			return nil, err
		}
		f.Count = n.Int64
		if lo.Valid && hi.Valid {
			f.CI = &figures.Interval{Low: lo.Float64, High: hi.Float64}
		}
		out[id] = append(out[id], f)
	}
	return out, rows.Err()
}

// Latest reads a line's latest n runs (all when n ≤ 0) with their
// figures, in commit-time order; excluded runs are left out.
func (s *Store) Latest(ctx context.Context, l Line, n int) ([]Record, error) {
	l.WithExcluded = false
	runs, err := s.Runs(ctx, l)
	if err != nil {
		return nil, err
	}
	if n > 0 && len(runs) > n {
		runs = runs[len(runs)-n:]
	}
	return s.Records(ctx, runs)
}

// Records reads the figures of runs, each run's record in the order
// given.
func (s *Store) Records(ctx context.Context, runs []Run) ([]Record, error) {
	figs, err := s.figureRows(ctx, runs)
	if err != nil {
		return nil, err
	}
	out := make([]Record, len(runs))
	for i, r := range runs {
		out[i] = Record{Run: r, Figures: figs[r.ID]}
	}
	return out, nil
}
