package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// TestHistoryRebaseline records the 30 real runs' summaries, accepts the
// upload's step as expected and re-baselines: the envelope rests on runs
// 11-30 without the outlier run 20 and equals, to the six digits the file
// keeps, what baseline derives from those runs' files with the current
// envelope's settings; compare, rules and serve accept it. On both back
// ends.
func TestHistoryRebaseline(t *testing.T) {
	base := t.TempDir()
	fx := fixtures.Path(t, "k6/history-v2.2.0")
	run := func(i int) string { return filepath.Join(fx, fmt.Sprintf("run-%02d.summary.json", i)) }
	var first, after []string
	for i := 1; i <= 30; i++ {
		switch {
		case i <= 10:
			first = append(first, run(i))
		case i != 20:
			after = append(after, run(i))
		}
	}
	old := filepath.Join(base, "current.yaml")
	mustRun(t, append([]string{"baseline", "--name", "mix", "--match", `envelope="mix"`, "--out", old}, first...)...)
	want := filepath.Join(base, "want.json")
	mustRun(t, append([]string{"baseline", "--name", "mix", "--match", `envelope="mix"`, "--format", "json", "--out", want}, after...)...)
	historyBackends(t, func(t *testing.T, dsn string) {
		checkRebaseline(t, dsn, old, want, fx)
	})
}

// checkRebaseline is TestHistoryRebaseline on one back end.
func checkRebaseline(t *testing.T, dsn, old, want, fx string) {
	dir := t.TempDir()
	run := func(i int) string { return filepath.Join(fx, fmt.Sprintf("run-%02d.summary.json", i)) }
	mustRun(t, "history", "--history", dsn, "--test", "mix", "import", "--pattern", "*.summary.json", fx)
	if code, _, se := cmdlinetest.Capture(runCLI, "history", "--history", dsn, "rebaseline"); code != 2 || !strings.Contains(se, "no change point is acknowledged or expected") {
		t.Errorf("rebaseline before any change was accepted: exit %d: %s", code, se)
	}
	if code, _, se := cmdlinetest.Capture(runCLI, "history", "--history", dsn, "rebaseline", "--since", "0123456789abcdef"); code != 2 || !strings.Contains(se, "no reported change point 0123456789abcdef") {
		t.Errorf("rebaseline --since an unknown id: exit %d: %s", code, se)
	}
	reportMD := filepath.Join(dir, "report", "history.md")
	out := mustRun(t, "history", "--history", dsn, "report", "--envelope", old, "--out", reportMD)
	if !strings.Contains(out, "30 runs, 29 series") {
		t.Errorf("report said: %s", out)
	}
	checkHistoryReport(t, reportMD)
	rep := changesJSON(t, dsn, 1, "--envelope", old) // the report reported nothing as new
	for _, d := range rep.Drift {
		// From the current envelope's latest run (run 10), or a later
		// change point of the series.
		if d.Since.Index < 10 {
			t.Errorf("drift of %s from run %d, before the envelope's last run", d.String(), d.Since.Index)
		}
	}
	if len(rep.Drift) < 20 {
		t.Errorf("drift of %d series", len(rep.Drift))
	}
	id := ""
	for _, c := range rep.Changes {
		if c.Endpoint == "document_upload" && c.Figure == "median" {
			id = c.ID
		}
	}
	if id == "" {
		t.Fatalf("no upload median change: %+v", rep.Changes)
	}
	mustRun(t, "history", "--history", dsn, "ack", id, "--status", "expected", "--note", "larger documents")
	newEnv := filepath.Join(dir, "new.yaml")
	out = mustRun(t, "history", "--history", dsn, "rebaseline", "--envelope", old, "--out", newEnv)
	if !strings.Contains(out, "runs 11-30, 19 runs; outlier runs left out: 20") || !strings.Contains(out, "document_upload.p95 (band max)") {
		t.Errorf("rebaseline said:\n%s", out)
	}
	got := filepath.Join(dir, "got.json")
	mustRun(t, "history", "--history", dsn, "rebaseline", "--since", id, "--envelope", old, "--format", "json", "--out", got)
	sameJSON(t, readJSON(t, want), readJSON(t, got), "envelope")

	if code, so, se := cmdlinetest.Capture(runCLI, "compare", "--envelope", newEnv, run(25)); code != 0 {
		t.Errorf("compare against the new envelope: exit %d\n%s%s", code, so, se)
	}
	mustRun(t, "rules", "--envelope", newEnv, "--out", filepath.Join(dir, "rules"))
	readmeServe(t, buildExporter(t), []string{"serve", "--envelope", newEnv, "--k6.results", filepath.Join(fx, "run-25.ndjson.gz")})
}

func readJSON(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// sameJSON compares two decoded JSON values, numbers to the relative
// 1e-5 of six significant digits (a mean of rounded run values may differ
// in its last digit).
func sameJSON(t *testing.T, want, got any, at string) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			t.Errorf("%s: got %v, want %v", at, got, want)
			return
		}
		for k := range w {
			sameJSON(t, w[k], g[k], at+"."+k)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Errorf("%s: got %v, want %v", at, got, want)
			return
		}
		for i := range w {
			sameJSON(t, w[i], g[i], fmt.Sprintf("%s[%d]", at, i))
		}
	case float64:
		g, ok := got.(float64)
		if !ok || math.Abs(g-w) > 1e-5*math.Abs(w) {
			t.Errorf("%s: got %v, want %v", at, got, want)
		}
	default:
		if got != want {
			t.Errorf("%s: got %v, want %v", at, got, want)
		}
	}
}

// checkHistoryReport: the report lists the upload's change point and the
// outlier run, and has a light and a dark chart of every series.
func checkHistoryReport(t *testing.T, md string) {
	t.Helper()
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"# Run history: mix", "## Change points", "| `document_upload.median` | 11 |", "regression", "## Outlier runs", "| 20 |", "`actor_get.avg`", "## Drift", "envelope mix's band"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(s, "<picture>"); n != 29 {
		t.Errorf("report has %d charts, want one per series (29)", n)
	}
	for _, theme := range []string{"light", "dark"} {
		for _, name := range []string{"history-document_upload.p95.png", "history-rps.png", "history-actor_get.avg.png"} {
			if fi, err := os.Stat(filepath.Join(filepath.Dir(md), "charts", theme, name)); err != nil || fi.Size() < 5000 {
				t.Errorf("chart %s/%s: %v", theme, name, err)
			}
		}
	}
}
