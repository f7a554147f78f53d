package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/history"
)

// changesJSON runs history changes --format json and checks its exit code.
func changesJSON(t *testing.T, dsn string, wantCode int, args ...string) history.ChangesReport {
	t.Helper()
	code, so, se := cmdlinetest.Capture(runCLI, append([]string{"history", "--history", dsn, "changes", "--format", "json"}, args...)...)
	if code != wantCode {
		t.Fatalf("history changes %v: exit %d, want %d: %s", args, code, wantCode, se)
	}
	var rep history.ChangesReport
	if err := json.Unmarshal([]byte(so), &rep); err != nil {
		t.Fatalf("%v\n%s", err, so)
	}
	return rep
}

// TestHistoryChangesFixture records the 30 real runs of the history
// fixture through the commands, in commit order (they were made two at a
// time, so their run times do not order them), on both back ends:
// recording reports the change points found at once; history changes
// finds the upload's step
// at run 11 (a regression, in the figures it moved), the auth
// improvement at run 23 or within the minimum segment after it, and run
// 20 as an outlier run, never a change; every change is new exactly
// once (exit 1, then 0); ack stores a status and a note.
func TestHistoryChangesFixture(t *testing.T) {
	files := fixtures.Glob(t, "k6/history-v2.2.0/run-*.ndjson.gz")
	record := func(dsn string, from, to int) string {
		var out strings.Builder
		for i := from; i <= to; i++ {
			out.WriteString(mustRun(t, "history", "--history", dsn, "record", "--time", fmt.Sprintf("2026-01-01 00:%02d:00", i), files[i-1]))
		}
		return out.String()
	}
	historyBackends(t, func(t *testing.T, dsn string) {
		out := record(dsn, 1, 19)
		if !strings.Contains(out, "not reported yet") || !strings.Contains(out, "document_upload.median") {
			t.Errorf("recording runs 1-19 reported no upload change:\n%s", out)
		}
		out = record(dsn, 20, 30)
		if !strings.Contains(out, "auth_register") || !strings.Contains(out, "improvement") {
			t.Errorf("recording runs 20-30 reported no auth change:\n%s", out)
		}
		rep := changesJSON(t, dsn, 1)
		checkFixtureChanges(t, rep)
		for _, c := range rep.Changes {
			if !c.New || c.Status != history.StatusNew || c.FirstReported == "" {
				t.Errorf("first report of %s: new %v, status %s, first reported %q", c.ID, c.New, c.Status, c.FirstReported)
			}
		}
		again := changesJSON(t, dsn, 0)
		if len(again.Changes) != len(rep.Changes) {
			t.Fatalf("second report: %d changes, first %d", len(again.Changes), len(rep.Changes))
		}
		for i, c := range again.Changes {
			if c.New || c.ID != rep.Changes[i].ID || c.Status != history.StatusNew {
				t.Errorf("second report of %s: new %v, id %s, status %s", rep.Changes[i].ID, c.New, c.ID, c.Status)
			}
		}
		id := rep.Changes[0].ID
		out = mustRun(t, "history", "--history", dsn, "ack", id, "--status", "expected", "--note", "new auth cache")
		if !strings.Contains(out, "expected: new auth cache") {
			t.Errorf("ack said: %s", out)
		}
		acked := changesJSON(t, dsn, 0)
		if c := acked.Changes[0]; c.ID != id || c.Status != history.StatusExpected || c.Note != "new auth cache" {
			t.Errorf("after ack: %+v", c)
		}
		for _, args := range [][]string{
			{"ack", "0000000000000000", "--status", "fixed"},
			{"ack", id, "--status", "ignored"},
			{"changes", "--since", "no-such-commit"},
		} {
			if code, _, se := cmdlinetest.Capture(runCLI, append([]string{"history", "--history", dsn}, args...)...); code != 2 || se == "" {
				t.Errorf("%v: exit %d (%s), want 2 with a message", args, code, se)
			}
		}
		since := changesJSON(t, dsn, 0, "--since", "c20")
		for _, c := range since.Changes {
			if c.Run.Index < 20 {
				t.Errorf("--since c20 shows a change at run %d", c.Run.Index)
			}
		}
		if since.Since == nil || since.Since.Index != 20 || len(since.Changes) == 0 || len(since.Changes) >= len(rep.Changes) {
			t.Errorf("--since c20: since %+v, %d of %d changes", since.Since, len(since.Changes), len(rep.Changes))
		}
	})
}

// checkFixtureChanges asserts the known changes of the history fixture
// (its CHANGES.txt) in a report.
func checkFixtureChanges(t *testing.T, rep history.ChangesReport) {
	t.Helper()
	if rep.Test != "history-shared" || rep.Runs != 30 {
		t.Errorf("test %q, %d runs", rep.Test, rep.Runs)
	}
	found := map[string]changepoint.Change{}
	for _, c := range rep.Changes {
		name := c.String()
		found[name] = c.Change
		switch {
		case c.Endpoint == "document_upload":
			if c.Direction != changepoint.Regression || c.Run.Index < 11 || c.Run.Index > 13 || c.Run.Commit == "" {
				t.Errorf("%s: %s at run %d (%s)", name, c.Direction, c.Run.Index, c.Run.Commit)
			}
		case c.Endpoint == "auth_register" || c.Endpoint == "auth_login" || c.Endpoint == "" && slices.Contains([]figures.Name{figures.Avg, figures.P95, figures.P99}, c.Figure):
			if c.Direction != changepoint.Improvement || c.Run.Index < 23 || c.Run.Index > 26 {
				t.Errorf("%s: %s at run %d", name, c.Direction, c.Run.Index)
			}
		default:
			t.Errorf("%s: a change at run %d in a series no change moved", name, c.Run.Index)
		}
	}
	for _, want := range []string{"document_upload.median", "document_upload.avg", "auth_register.median", "auth_register.avg"} {
		if _, ok := found[want]; !ok {
			t.Errorf("no change point in %s", want)
		}
	}
	// The upload's and the registration's runs (60–120 requests) estimate
	// no p95 or p99: not analysed, with the requests a run needs.
	skipped := map[string]int64{}
	for _, n := range rep.NotAnalysed {
		skipped[n.String()] = n.RequestsNeeded
	}
	for want, need := range map[string]int64{"document_upload.p95": 200, "document_upload.p99": 1000, "auth_register.p95": 200} {
		if skipped[want] != need {
			t.Errorf("%s: not analysed %v, want %d requests needed", want, skipped, need)
		}
	}
	actor := false
	for _, o := range rep.Outliers {
		if o.Run.Index != 20 {
			t.Errorf("outlier run %d in %s", o.Run.Index, o.String())
		}
		actor = actor || o.Endpoint == "actor_get" && o.Direction == changepoint.Regression && o.Value > o.SegmentMean*1.3
	}
	if !actor {
		t.Errorf("run 20 is not an outlier of actor_get: %+v", rep.Outliers)
	}
}

// TestChangesOutputs: the JUnit report fails one case per series with a
// new regression (and no other), the Markdown lists every change, and a
// change reported before fails nothing.
func TestChangesOutputs(t *testing.T) {
	ch := func(ep string, fig figures.Name, dir changepoint.Direction, isNew bool) history.ReportedChange {
		return history.ReportedChange{Change: changepoint.Change{ID: ep + string(fig), Key: changepoint.Key{Figure: fig, Endpoint: ep},
			Run: changepoint.RunRef{Index: 11, Commit: "c11"}, Direction: dir, Before: 76.7, After: 96.2, Change: 0.254, P: 1e-6},
			Status: history.StatusNew, New: isNew}
	}
	rep := &history.ChangesReport{Test: "t", Runs: 30, Changes: []history.ReportedChange{
		ch("document_upload", "p95", changepoint.Regression, true),
		ch("auth_register", "p95", changepoint.Improvement, true),
		ch("document_upload", "median", changepoint.Regression, false),
	}, Drift: []changepoint.Drift{{Key: changepoint.Key{Figure: "rps"}}}}
	var b bytes.Buffer
	if err := writeChanges(&b, rep, "junit"); err != nil {
		t.Fatal(err)
	}
	j := b.String()
	if !strings.Contains(j, `tests="4" failures="1"`) || !strings.Contains(j, `name="document_upload.p95"`) || !strings.Contains(j, "new regression at run 11") {
		t.Errorf("junit:\n%s", j)
	}
	b.Reset()
	if err := writeChanges(&b, rep, "markdown"); err != nil {
		t.Fatal(err)
	}
	if md := b.String(); strings.Count(md, "\n| `") != 3 || !strings.Contains(md, "1 of them new regressions") {
		t.Errorf("markdown:\n%s", md)
	}
}
