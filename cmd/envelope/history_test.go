package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/otava"
	"github.com/envelope-dev/envelope/internal/pgtest"
	"github.com/envelope-dev/envelope/internal/runstore"
)

func TestMain(m *testing.M) {
	if asEnvelope() {
		os.Exit(runCLI(os.Args[1:], os.Stdout, os.Stderr))
	}
	code := pgtest.Main(m)
	if exporterDir != "" {
		_ = os.RemoveAll(exporterDir) // a temporary build: nothing is lost
	}
	os.Exit(code)
}

// historyBackends runs f with an SQLite file and a real PostgreSQL.
func historyBackends(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, filepath.Join(t.TempDir(), "history.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.DSN(t)) })
}

// mustRun runs the command line and fails unless it exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, so, se := cmdlinetest.Capture(runCLI, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, se)
	}
	return so
}

type seriesJSON struct {
	Test     string `json:"test"`
	Figure   string `json:"figure"`
	Endpoint string `json:"endpoint"`
	Runs     []struct {
		Index    int                          `json:"index"`
		TestID   string                       `json:"testid"`
		Commit   string                       `json:"commit"`
		Time     string                       `json:"time"`
		Value    float64                      `json:"value"`
		Count    int64                        `json:"count"`
		Interval *struct{ Low, High float64 } `json:"interval"`
		Excluded string                       `json:"excluded"`
	} `json:"runs"`
}

func showJSON(t *testing.T, dsn string, args ...string) seriesJSON {
	t.Helper()
	so := mustRun(t, append([]string{"history", "--history", dsn, "show", "--format", "json"}, args...)...)
	var s seriesJSON
	if err := json.Unmarshal([]byte(so), &s); err != nil {
		t.Fatalf("%v\n%s", err, so)
	}
	return s
}

// TestHistoryRecordShowEqualsBaseline records runs (metadata from their
// k6 tags) and shows a figure: each run's value equals the per-run value
// of the envelope baseline derives from the same files. The runs were
// made two at a time, so one commit time for all keeps them in the
// order they are recorded.
func TestHistoryRecordShowEqualsBaseline(t *testing.T) {
	files := fixtures.Glob(t, "k6/history-v2.2.0/run-1[123].ndjson.gz")
	envOut := mustRun(t, append([]string{"baseline", "--format", "json", "--out", "-"}, files...)...)
	var env struct {
		Runs []struct {
			P95       float64 `json:"p95"`
			Endpoints map[string]struct {
				P95   float64                      `json:"p95"`
				Count int64                        `json:"count"`
				P95CI *struct{ Low, High float64 } `json:"p95_ci"`
			} `json:"endpoints"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(envOut), &env); err != nil {
		t.Fatal(err)
	}
	historyBackends(t, func(t *testing.T, dsn string) {
		out := mustRun(t, append([]string{"history", "--history", dsn, "record", "--time", "2026-01-01 00:00:00"}, files...)...)
		if !strings.Contains(out, "3 of 3 runs new") || !strings.Contains(out, "testid run-12, commit c12") {
			t.Errorf("record said:\n%s", out)
		}
		again := mustRun(t, append([]string{"history", "--history", dsn, "record"}, files...)...)
		if !strings.Contains(again, "0 of 3 runs new") || !strings.Contains(again, "already recorded") {
			t.Errorf("recording again said:\n%s", again)
		}
		s := showJSON(t, dsn, "--figure", "auth_login.p95")
		if s.Test != "history-shared" || s.Figure != "p95" || s.Endpoint != "auth_login" || len(s.Runs) != 3 {
			t.Fatalf("show: %+v", s)
		}
		for i, r := range s.Runs {
			want := env.Runs[i].Endpoints["auth_login"]
			if r.Index != i+1 || r.Commit != fmt.Sprintf("c%d", 11+i) || r.TestID != fmt.Sprintf("run-%d", 11+i) || r.Time == "" {
				t.Errorf("run %d: %+v", i, r)
			}
			if r.Value != want.P95 || r.Count != want.Count || r.Interval == nil || want.P95CI == nil || *r.Interval != *want.P95CI {
				t.Errorf("run %d: history %v n=%d %v, baseline %v n=%d %v", i, r.Value, r.Count, r.Interval, want.P95, want.Count, want.P95CI)
			}
		}
		if agg := showJSON(t, dsn, "--figure", "p95"); agg.Endpoint != "" || agg.Runs[2].Value != env.Runs[2].P95 {
			t.Errorf("aggregate p95: %+v, baseline %v", agg, env.Runs[2].P95)
		}
	})
}

// TestHistoryBadFileAmongTen: nothing is recorded and the error names
// the file, line and field.
func TestHistoryBadFileAmongTen(t *testing.T) {
	dir := t.TempDir()
	for _, p := range fixtures.Glob(t, "k6/history-v2.2.0/run-0*.summary.json") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p, "run-05.summary.json") {
			b = []byte(strings.Replace(string(b), `"http_reqs": {
            "count": `, `"http_reqs": {
            "count": "lots", "was": `, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	historyBackends(t, func(t *testing.T, dsn string) {
		code, _, se := cmdlinetest.Capture(runCLI, "history", "--history", dsn, "--test", "mix", "import", dir)
		if code != 2 || !strings.Contains(se, "nothing recorded") || !strings.Contains(se, "run-05.summary.json:") ||
			!strings.Contains(se, `"http_reqs" field "count"`) {
			t.Errorf("exit %d: %s", code, se)
		}
		code, _, se = cmdlinetest.Capture(runCLI, "history", "--history", dsn, "list")
		// Nothing written: no SQLite file at all, an empty PostgreSQL.
		if code != 2 || !strings.Contains(se, "holds no runs") && !strings.Contains(se, "does not exist: record runs") {
			t.Errorf("after a failed import: exit %d: %s", code, se)
		}
	})
}

// TestHistoryExcludeBranchesCSV covers an Otava-style CSV import,
// branches, and a reversible exclusion.
func TestHistoryExcludeBranchesCSV(t *testing.T) {
	csvPath := filepath.Join(t.TempDir(), "otava.csv")
	csv := "time,commit,branch,p95,auth_login.p95,rps\n" +
		"2026-01-01 10:00:00 +0000,a1,main,700,900,53.1\n" +
		"2026-01-02 10:00:00 +0000,a2,,710,,53.0\n" +
		"2026-01-03 10:00:00 +0000,a3,feature-x,900,1200,50.2\n" +
		"2026-01-04 10:00:00 +0000,a4,main,705,910,53.3\n"
	if err := os.WriteFile(csvPath, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	historyBackends(t, func(t *testing.T, dsn string) {
		h := []string{"history", "--history", dsn}
		code, _, se := cmdlinetest.Capture(runCLI, append(h, "import", "--from-csv", csvPath)...)
		if code != 2 || !strings.Contains(se, "--test") {
			t.Errorf("import without --test: exit %d: %s", code, se)
		}
		mustRun(t, append(h, "--test", "checkout", "import", "--from-csv", csvPath)...)
		if out := mustRun(t, append(h, "--test", "checkout", "import", "--from-csv", csvPath)...); !strings.Contains(out, "0 of 4 runs new") {
			t.Errorf("importing again: %s", out)
		}
		commits := func(s seriesJSON) string {
			var cs []string
			for _, r := range s.Runs {
				c := r.Commit
				if r.Excluded != "" {
					c += "(x)"
				}
				cs = append(cs, c)
			}
			return strings.Join(cs, " ")
		}
		if got := commits(showJSON(t, dsn, "--figure", "p95")); got != "a1 a2 a4" {
			t.Errorf("main line %s", got)
		}
		if got := commits(showJSON(t, dsn, "--figure", "auth_login.p95", "--branch", "feature-x")); got != "a3" {
			t.Errorf("feature-x %s", got)
		}
		out := mustRun(t, append(h, "branches")...)
		for _, want := range []string{"(none)", "feature-x", "main"} {
			if !strings.Contains(out, want) {
				t.Errorf("branches lack %s:\n%s", want, out)
			}
		}
		id := strings.Fields(strings.Split(mustRun(t, append(h, "list")...), "\n")[2])[1] // a2's run id
		if out := mustRun(t, append(h, "exclude", id, "--reason", "deploy overlapped")...); !strings.Contains(out, "excluded from analysis: deploy overlapped") {
			t.Errorf("exclude said %s", out)
		}
		if got := commits(showJSON(t, dsn, "--figure", "p95")); got != "a1 a2(x) a4" {
			t.Errorf("after exclude %s", got)
		}
		if list := mustRun(t, append(h, "list")...); !strings.Contains(list, "excluded: deploy overlapped") {
			t.Errorf("list lacks the exclusion:\n%s", list)
		}
		mustRun(t, append(h, "include", id)...)
		if got := commits(showJSON(t, dsn, "--figure", "p95")); got != "a1 a2 a4" {
			t.Errorf("after include %s", got)
		}
		md := mustRun(t, append(h, "show", "--figure", "p95", "--format", "markdown")...)
		if !strings.Contains(md, "### p95 of test checkout (ms), main line: 3 runs") || !strings.Contains(md, "| 2 | 2 | a2 | 2026-01-02T10:00:00Z |  | 710 |") {
			t.Errorf("show --format markdown:\n%s", md)
		}
		if code, _, se := cmdlinetest.Capture(runCLI, append(h, "show", "--figure", "auth_login.rps")...); code != 2 || !strings.Contains(se, "an endpoint has only") {
			t.Errorf("bad figure: exit %d %s", code, se)
		}
	})
}

type compareJSON struct {
	Regressed bool `json:"regressed"`
	Figures   []struct {
		Name      string  `json:"name"`
		Endpoint  string  `json:"endpoint"`
		Baseline  float64 `json:"baseline"`
		Candidate float64 `json:"candidate"`
		Verdict   string  `json:"verdict"`
	} `json:"figures"`
}

func parseCompare(t *testing.T, args ...string) (int, compareJSON) {
	t.Helper()
	code, so, se := cmdlinetest.Capture(runCLI, args...)
	var res compareJSON
	if err := json.Unmarshal([]byte(so), &res); err != nil {
		t.Fatalf("%v: exit %d: %v\n%s%s", args, code, err, so, se)
	}
	return code, res
}

// TestHistoryCompareMatchesCompare judges a branch's runs against the
// main line's in history and the same files with baseline and compare:
// the same figures, baselines and verdicts, and exit 1 on the upload
// regression the branch's runs carry.
func TestHistoryCompareMatchesCompare(t *testing.T) {
	var base, cand []string
	for i := 1; i <= 19; i++ {
		p := fixtures.Path(t, fmt.Sprintf("k6/history-v2.2.0/run-%02d.summary.json", i))
		if i <= 10 {
			base = append(base, p)
		} else {
			cand = append(cand, p)
		}
	}
	envPath := filepath.Join(t.TempDir(), "envelope.yaml")
	mustRun(t, append([]string{"baseline", "--out", envPath}, base...)...)
	wantCode, want := parseCompare(t, append([]string{"compare", "--format", "json", "--envelope", envPath}, cand...)...)
	if wantCode != 1 || !want.Regressed {
		t.Fatalf("compare: exit %d, want a regression", wantCode)
	}
	historyBackends(t, func(t *testing.T, dsn string) {
		h := []string{"history", "--history", dsn, "--test", "mix"}
		mustRun(t, append(append(h, "record", "--branch", "main"), base...)...)
		mustRun(t, append(append(h, "record", "--branch", "slow"), cand...)...)
		code, got := parseCompare(t, append(h, "compare", "--branch", "slow", "--candidates", "9", "--format", "json")...)
		if code != 1 || len(got.Figures) != len(want.Figures) {
			t.Fatalf("history compare: exit %d, %d figures; compare %d", code, len(got.Figures), len(want.Figures))
		}
		for i, g := range got.Figures {
			w := want.Figures[i]
			if g.Name != w.Name || g.Endpoint != w.Endpoint || g.Verdict != w.Verdict || !nearlyEqual(g.Baseline, w.Baseline, 1e-9) || !nearlyEqual(g.Candidate, w.Candidate, 1e-5) {
				t.Errorf("figure %d: history %+v, compare %+v", i, g, w)
			}
		}
		junit := filepath.Join(t.TempDir(), "history-junit.xml")
		code, so, _ := cmdlinetest.Capture(runCLI, append(h, "compare", "--branch", "slow", "--candidates", "9", "--format", "junit")...)
		if err := os.WriteFile(junit, []byte(so), 0o644); err != nil {
			t.Fatal(err)
		}
		if code != 1 {
			t.Errorf("history compare --format junit: exit %d", code)
		}
		checkRegressedJUnit(t, junit, "document_upload median vs other endpoints")
		code, _, se := cmdlinetest.Capture(runCLI, append(h, "compare", "--branch", "nowhere")...)
		if code != 2 || !strings.Contains(se, "no run on branch nowhere") {
			t.Errorf("unknown branch: exit %d %s", code, se)
		}
	})
}

func nearlyEqual(a, b, rel float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= rel*max(a, b, -a, -b)
}

// Recording stops on its context's end (a Ctrl-C): nothing is written and
// the history stays as it was, open to the next command.
func TestHistoryRecordStopsOnEndedContext(t *testing.T) {
	dir := t.TempDir()
	dsn := filepath.Join(dir, "history.db")
	csvPath := filepath.Join(dir, "otava.csv")
	if err := os.WriteFile(csvPath, []byte("time,commit,p95\n2026-01-01 10:00:00 +0000,a1,700\n2026-01-02 10:00:00 +0000,a2,710\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "history", "--history", dsn, "--test", "checkout", "import", "--from-csv", csvPath)
	recs, err := otava.ReadCSV("more.csv", strings.NewReader("time,commit,p95\n2026-01-03 10:00:00 +0000,a3,720\n"), "checkout")
	if err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	_, c := cmdline.New("envelope", "", &o, &e)
	test, mainBranch := "checkout", runstore.DefaultMainBranch
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = (&cli{c}).addRecords(ctx, historyFlags{dsn: &dsn, test: &test, mainBranch: &mainBranch}, recs)
	if !errors.Is(err, context.Canceled) || o.Len() > 0 {
		t.Errorf("recording on an ended context: %v, stdout %q; want context.Canceled and nothing said", err, o.String())
	}
	if out := mustRun(t, "history", "--history", dsn, "list"); !strings.Contains(out, "a2") || strings.Contains(out, "a3") {
		t.Errorf("after the stopped recording:\n%s", out)
	}
}
