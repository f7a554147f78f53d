package dashboards

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/pgtest"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// timeFilter is Grafana's $__timeFilter macro.
var timeFilter = regexp.MustCompile(`\$__timeFilter\((COALESCE\(r\.commit_time, r\.run_time\))\)`)

// interpolate does what Grafana does to a query before sending it: the
// variables' values and the time-range macro.
func interpolate(q string, vars map[string]string) string {
	q = timeFilter.ReplaceAllString(q, "$1 BETWEEN '2000-01-01T00:00:00Z' AND '2100-01-01T00:00:00Z'")
	for _, k := range []string{"endpoint", "figure", "branch", "test"} {
		q = strings.ReplaceAll(q, "$"+k, vars[k])
	}
	return q
}

// TestHistoryQueriesReturnRows runs every query of the Run history
// dashboard (variables and panels, with the envelope band) against a
// real PostgreSQL holding recorded fixture runs: each returns rows, for
// an endpoint's figure and an aggregate one.
func TestHistoryQueriesReturnRows(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	s, err := runstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close() //nolint:errcheck // test
	files := append(fixtures.Glob(t, "k6/history-v2.2.0/run-0[1-4].summary.json"), fixtures.Path(t, "k6/history-v2.2.0/run-05.ndjson.gz"))
	in, err := figures.ReadFiles(files, figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	var recs []runstore.Record
	for i, r := range in {
		rec, err := runstore.FromRun(r, runstore.Meta{Test: "history-shared", Commit: fmt.Sprintf("c%02d", i+1), Branch: "main",
			CommitTime: time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if _, err := s.Add(ctx, recs); err != nil {
		t.Fatal(err)
	}
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	d, err := BuildHistory(env)
	if err != nil {
		t.Fatal(err)
	}
	queries := HistoryQueries(d)
	if len(queries) < 7 {
		t.Fatalf("%d queries", len(queries))
	}
	db := s.DB()
	for _, vars := range []map[string]string{
		{"test": "history-shared", "endpoint": "auth_login", "figure": "p95", "branch": "main"},
		{"test": "history-shared", "endpoint": "aggregate", "figure": "p99", "branch": "main"},
	} {
		for _, q := range queries {
			sqlText := interpolate(q, vars)
			if strings.Contains(sqlText, "$") {
				t.Fatalf("uninterpolated: %s", sqlText)
			}
			if n := countRows(t, db, sqlText); n == 0 {
				t.Errorf("%v: no rows from\n%s", vars, sqlText)
			}
		}
	}
}

func countRows(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	defer rows.Close() //nolint:errcheck // test
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// The committed dashboards/history.json is the one the builder makes
// (without an envelope, as go generate writes it), and only an envelope
// adds the band.
func TestHistoryGolden(t *testing.T) {
	d, err := BuildHistory(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(committedDir, filepath.FromSlash(d.File))
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go generate ./...)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the builder; run go generate ./...", path)
	}
	if strings.Contains(string(got), "envelope min") {
		t.Error("the band is drawn without an envelope")
	}
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	with, err := BuildHistory(env)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := with.JSON()
	if !strings.Contains(string(j), "envelope min") || !strings.Contains(string(j), "('auth_login', 'p95', ") {
		t.Error("the envelope's bands are not in the dashboard")
	}
}
