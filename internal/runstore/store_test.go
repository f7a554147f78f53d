package runstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/pgtest"
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv(childDSN); dsn != "" {
		os.Exit(recordForever(dsn))
	}
	code := pgtest.Main(m)
	os.Exit(code)
}

// backends runs f against an SQLite file and a real PostgreSQL: one
// suite for both.
func backends(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { f(t, filepath.Join(t.TempDir(), "history.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.DSN(t)) })
}

func open(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// readRuns reads fixture runs as baseline does.
func readRuns(t testing.TB, pattern string) []figures.Run {
	t.Helper()
	in, err := figures.ReadFiles(fixtures.Glob(t, pattern), figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// records makes the records of runs, in order, with commit cNN and a
// commit time a day apart; summaries name their test.
func records(t testing.TB, in []figures.Run) []Record {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []Record
	for i, r := range in {
		rec, err := FromRun(r, Meta{Test: "history-shared", Commit: fmt.Sprintf("c%02d", i+1), CommitTime: base.AddDate(0, 0, i)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

func add(t *testing.T, s *Store, recs []Record) []Added {
	t.Helper()
	a, err := s.Add(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRecordEqualsBaseline records runs one by one and reads every
// figure back: each equals, to the last digit, the run's value in the
// envelope baseline derives from all the runs together.
func TestRecordEqualsBaseline(t *testing.T) {
	sets := map[string][]figures.Run{
		"summary": readRuns(t, "k6/history-v2.2.0/run-*.summary.json"),
		"ndjson":  readRuns(t, "k6/history-v2.2.0/run-1[01].ndjson.gz"),
	}
	backends(t, func(t *testing.T, dsn string) {
		for kind, in := range sets {
			env, err := envelope.Compute(in, envelope.Options{Name: "history-shared"})
			if err != nil {
				t.Fatal(err)
			}
			s := open(t, dsn)
			recs := records(t, in)
			for i := range recs {
				recs[i].Test = kind // one history, a test per kind
			}
			add(t, s, recs)
			withCI := 0
			for i, run := range env.Runs {
				want := run.Figures()
				if len(want) < 9 {
					t.Fatalf("%s run %d: only %d figures", kind, i, len(want))
				}
				// Direct fields too, so a mapping error on both sides
				// cannot hide.
				direct := map[string]float64{"rps": run.RPS, "p95": run.P95, "error_rate": run.ErrorRate(),
					"auth_login.p99": run.Endpoints["auth_login"].P99}
				for _, f := range want {
					pts, err := s.Series(context.Background(), Line{Test: kind}, f.Key)
					if err != nil {
						t.Fatal(err)
					}
					p := pts[i]
					if p.Run.Commit != recs[i].Commit || p.Value != f.X || p.Count != f.Count || !sameCI(p.CI, f.CI) {
						t.Errorf("%s %s %s: history %v n=%d ci=%v, baseline %v n=%d ci=%v", kind, run.Source, f.Key, p.Value, p.Count, p.CI, f.X, f.Count, f.CI)
					}
					if v, ok := direct[f.Key.String()]; ok && v != p.Value {
						t.Errorf("%s %s %s: history %v, envelope field %v", kind, run.Source, f.Key, p.Value, v)
					}
					if p.CI != nil {
						withCI++
					}
				}
			}
			if kind == "ndjson" && withCI == 0 {
				t.Errorf("ndjson runs recorded no order-statistic interval")
			}
		}
	})
}

func sameCI(a, b *figures.Interval) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// TestIdempotent records the same runs twice: one run each.
func TestIdempotent(t *testing.T) {
	in := readRuns(t, "k6/history-v2.2.0/run-0[1-3].summary.json")
	backends(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		first := add(t, s, records(t, in))
		again := add(t, s, records(t, in))
		for i := range first {
			if first[i].Existing || !again[i].Existing || first[i].ID != again[i].ID {
				t.Errorf("run %d: first %+v, again %+v", i, first[i], again[i])
			}
		}
		if runs, _ := s.Runs(context.Background(), Line{Test: "history-shared"}); len(runs) != 3 {
			t.Errorf("%d runs, want 3", len(runs))
		}
	})
}

// TestTransactional adds ten runs of which one cannot be stored: none is.
func TestTransactional(t *testing.T) {
	in := readRuns(t, "k6/history-v2.2.0/run-0*.summary.json")
	in = append(in, readRuns(t, "k6/history-v2.2.0/run-10.summary.json")...)
	backends(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		recs := records(t, in)
		recs[7].SHA256 = ""
		_, err := s.Add(context.Background(), recs)
		if err == nil || !strings.Contains(err.Error(), "run-08.summary.json") {
			t.Fatalf("error %v, want one naming run-08.summary.json", err)
		}
		if runs, _ := s.Runs(context.Background(), Line{Test: "history-shared", WithExcluded: true}); len(runs) != 0 {
			t.Errorf("%d runs stored after a failed batch, want none", len(runs))
		}
		var n int
		if err := s.DB().QueryRow("SELECT COUNT(*) FROM figures").Scan(&n); err != nil || n != 0 {
			t.Errorf("%d figures stored after a failed batch (%v), want none", n, err)
		}
	})
}

// TestSeriesLines orders runs by commit time (run time without one),
// keeps other branches out of the main line and excluded runs out of
// analysis, reversibly.
func TestSeriesLines(t *testing.T) {
	in := readRuns(t, "k6/history-v2.2.0/run-0[1-4].summary.json")
	backends(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		ctx := context.Background()
		recs := records(t, in)
		// Recorded out of order: history is by commit time.
		recs[0].CommitTime, recs[3].CommitTime = recs[3].CommitTime, recs[0].CommitTime
		recs[2].Branch = "feature"
		recs[1].Branch = "main"
		add(t, s, recs)
		commits := func(l Line) string {
			pts, err := s.Series(ctx, l, figures.Key{Figure: figures.P95})
			if err != nil {
				t.Fatal(err)
			}
			var cs []string
			for _, p := range pts {
				cs = append(cs, fmt.Sprintf("%d:%s", p.Index, p.Run.Commit))
			}
			return strings.Join(cs, " ")
		}
		main := Line{Test: "history-shared"}
		if got, want := commits(main), "1:c04 2:c02 3:c01"; got != want {
			t.Errorf("main line %q, want %q", got, want)
		}
		if got, want := commits(Line{Test: "history-shared", Branch: "feature"}), "1:c03"; got != want {
			t.Errorf("feature branch %q, want %q", got, want)
		}
		if _, err := s.Exclude(ctx, "", "noisy"); err == nil {
			t.Error("excluding run \"\" succeeded")
		}
		if _, err := s.Exclude(ctx, "2", ""); err == nil {
			t.Error("excluding without a reason succeeded")
		}
		r, err := s.Exclude(ctx, "2", "noisy neighbour")
		if err != nil || r.Commit != "c02" {
			t.Fatalf("exclude: %v %+v", err, r)
		}
		if got, want := commits(main), "1:c04 2:c01"; got != want {
			t.Errorf("main line without the excluded run %q, want %q", got, want)
		}
		shown := main
		shown.WithExcluded = true
		runs, _ := s.Runs(ctx, shown)
		if len(runs) != 3 || !runs[1].Excluded || runs[1].Reason != "noisy neighbour" {
			t.Errorf("shown runs %+v", runs)
		}
		if _, err := s.Include(ctx, "2"); err != nil {
			t.Fatal(err)
		}
		if got, want := commits(main), "1:c04 2:c02 3:c01"; got != want {
			t.Errorf("main line after include %q, want %q", got, want)
		}
		bs, err := s.Branches(ctx, "history-shared")
		if err != nil || len(bs) != 3 || bs[1].Name != "feature" || bs[1].Runs != 1 || bs[1].Latest.IsZero() {
			t.Errorf("branches %+v %v", bs, err)
		}
		keys, err := s.SeriesKeys(ctx, "history-shared")
		if err != nil || len(keys) < 9 || keys[0] != (figures.Key{Figure: figures.RPS}) {
			t.Errorf("series keys %v %v", keys, err)
		}
	})
}

// TestMigrations opens a history at schema version 1, which is
// migrated with its runs kept, and one newer than this build, which is
// refused with its version.
func TestMigrations(t *testing.T) {
	in := readRuns(t, "k6/history-v2.2.0/run-01.summary.json")
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		d, driverDSN, where, err := parseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		old := openAt(t, d, driverDSN, where, 1)
		add(t, old, records(t, in))
		_ = old.Close()
		s := open(t, dsn)
		var v int
		if err := s.DB().QueryRow("SELECT MAX(version) FROM schema_migrations").Scan(&v); err != nil || v != SchemaVersion() || v < 2 {
			t.Fatalf("schema version %d (%v), want %d", v, err, SchemaVersion())
		}
		if pts, err := s.Series(ctx, Line{Test: "history-shared"}, figures.Key{Figure: figures.RPS}); err != nil || len(pts) != 1 {
			t.Errorf("after migrating: %d points, %v", len(pts), err)
		}
		if _, err := s.DB().Exec(s.d.rebind("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'later')"), 99); err != nil {
			t.Fatal(err)
		}
		_, err = Open(ctx, dsn)
		if err == nil || !strings.Contains(err.Error(), "schema version 99") {
			t.Errorf("opening a newer history: %v", err)
		}
	})
}

// DSNs: a path or file: URI is SQLite, a postgres URL PostgreSQL with its
// password kept out of messages, anything URL-like else refused.
func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn, backend, where, err string
	}{
		{"", "sqlite", DefaultDSN, ""},
		{"runs/h.db", "sqlite", "runs/h.db", ""},
		{"file:h.db?cache=shared", "sqlite", "h.db", ""},
		{"postgres://u:secret@db:5432/perf?sslmode=require", "postgres", "postgres://u:xxxxx@db:5432/perf?sslmode=require", ""},
		{"postgresql://db/perf", "postgres", "postgresql://db/perf", ""},
		{"mysql://u:secret@db/perf", "", "", "not a file path nor a postgres:// URL"},
		{"host=db dbname=perf", "", "", "not a file path nor a postgres:// URL"},
	} {
		d, driverDSN, where, err := parseDSN(tc.dsn)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "secret") {
				t.Errorf("%q: error %v, want %q without the password", tc.dsn, err, tc.err)
			}
		case err != nil || d.name != tc.backend || where != tc.where:
			t.Errorf("%q: %s %q %v, want %s %q", tc.dsn, d.name, where, err, tc.backend, tc.where)
		case d.name == "sqlite" && (!strings.Contains(driverDSN, "busy_timeout") || !strings.Contains(driverDSN, "journal_mode%28WAL%29")):
			t.Errorf("%q: SQLite DSN %q lacks the busy timeout or WAL", tc.dsn, driverDSN)
		}
	}
}
