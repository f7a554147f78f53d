package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/history"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// changeRow is a change-point row of what history record prints: what
// happened to it (new, moved, gone) and its id.
var changeRow = regexp.MustCompile(`(?m)^(new|again|moved|gone) +([0-9a-f]{16}) `)

// TestHistoryRecordSaysWhatChanged records the 30 real runs of the
// history fixture one at a time, in commit order, on both back ends:
// each record prints only what its run changed, so every change point
// of the line is printed as new exactly once, at the record that first
// finds it, and a record that changes nothing prints no row; the
// upload's step is first found with run 15 and the auth improvement with
// run 26; the 30th record's summary counts the 9 change points as
// before, none reported yet.
func TestHistoryRecordSaysWhatChanged(t *testing.T) {
	files := fixtures.Glob(t, "k6/history-v2.2.0/run-*.ndjson.gz")
	historyBackends(t, func(t *testing.T, dsn string) {
		printed := map[string]int{} // id: the run whose record printed it as new
		for i, f := range files {
			out := mustRun(t, "history", "--history", dsn, "record", "--time", fmt.Sprintf("2026-01-01 00:%02d:00", i+1), f)
			for _, m := range changeRow.FindAllStringSubmatch(out, -1) {
				if m[1] != "new" {
					t.Errorf("run %d: %s %s: no change of the fixture moves or goes when recorded in commit order", i+1, m[1], m[2])
					continue
				}
				if at, ok := printed[m[2]]; ok {
					t.Errorf("run %d prints change %s as new again (first at run %d):\n%s", i+1, m[2], at, out)
				}
				printed[m[2]] = i + 1
			}
			if i+1 == 30 && !strings.Contains(out, "0 new, 0 moved, 0 no longer found, 9 as before; 9 not reported yet") {
				t.Errorf("the 30th record's summary:\n%s", out)
			}
		}
		rep := changesJSON(t, dsn, 1)
		checkFixtureChanges(t, rep)
		if len(printed) != len(rep.Changes) {
			t.Errorf("records printed %d changes as new, history changes finds %d", len(printed), len(rep.Changes))
		}
		for _, c := range rep.Changes {
			at, ok := printed[c.ID]
			switch {
			case !ok:
				t.Errorf("%s (%s) was never printed by a record", c.ID, c.String())
			case c.Endpoint == "document_upload" && at != 15, c.Endpoint == "auth_register" && at != 26:
				t.Errorf("%s first printed at run %d", c.String(), at)
			}
		}
	})
}

// TestHistoryRecordFoundAgain: a change history changes reported, lost
// when runs after it are excluded, is the same change when a record
// finds it again: on the real history recorded to run 26 and reported,
// runs 25 and 26 excluded, recording run 27 finds nothing (two runs
// after c24), and recording run 28 finds the registration's improvement
// at c24 again, under its ids, as reported, not new.
func TestHistoryRecordFoundAgain(t *testing.T) {
	files := fixtures.Glob(t, "k6/history-v2.2.0/run-*.ndjson.gz")
	historyBackends(t, func(t *testing.T, dsn string) {
		h := []string{"history", "--history", dsn}
		record := func(i int) string {
			return mustRun(t, append(h, "record", "--time", fmt.Sprintf("2026-01-01 00:%02d:00", i), files[i-1])...)
		}
		for i := 1; i <= 26; i++ {
			record(i)
		}
		var auth []string
		for _, c := range changesJSON(t, dsn, 1).Changes {
			if c.Endpoint == "auth_register" {
				auth = append(auth, c.ID)
			}
		}
		if len(auth) != 3 {
			t.Fatalf("registration changes at 26 runs: %v", auth)
		}
		mustRun(t, append(h, "exclude", "run-25", "--reason", "test")...)
		mustRun(t, append(h, "exclude", "run-26", "--reason", "test")...)
		if out := record(27); changeRow.MatchString(out) {
			t.Errorf("run 27 with 25 and 26 excluded:\n%s", out)
		}
		out := record(28)
		rows := changeRow.FindAllStringSubmatch(out, -1)
		if len(rows) != len(auth) || !strings.Contains(out, "0 new, 3 found again, 0 moved") {
			t.Errorf("run 28 with 25 and 26 excluded:\n%s", out)
		}
		for _, m := range rows {
			if m[1] != "again" || !slices.Contains(auth, m[2]) {
				t.Errorf("run 28: %s %s, want the registration's changes found again", m[1], m[2])
			}
		}
		if n := len(regexp.MustCompile(`(?m)^again .* reported +$`).FindAllString(out, -1)); n != len(auth) {
			t.Errorf("run 28: the changes found again are not shown as reported:\n%s", out)
		}
	})
}

// TestHistoryChangeIdentity: on the real 30-run history, once history
// changes has reported the 9 change points, a reported change keeps its
// id and state whatever the line does. Leaving the runs after the auth
// improvement out (c25–c30) leaves its run c24 the line's last: its
// changes are listed as no longer found, with why (too few runs after
// it), not dropped, and not new. With runs 25 and 26 back, the
// endpoint's changes are found again under their ids and the aggregate's
// (decided from run 29 on) say why they are not. Putting every run back
// finds them all again under their ids, as reported, not new (exit 0).
// history report then says each change's state (reported, never new);
// ack accepts every change of the two real changes at once by run
// range, and history changes and history report then show them
// acknowledged.
func TestHistoryChangeIdentity(t *testing.T) {
	files := fixtures.Glob(t, "k6/history-v2.2.0/run-*.ndjson.gz")
	historyBackends(t, func(t *testing.T, dsn string) {
		h := []string{"history", "--history", dsn}
		for i, f := range files {
			mustRun(t, append(h, "record", "--time", fmt.Sprintf("2026-01-01 00:%02d:00", i+1), f)...)
		}
		first := changesJSON(t, dsn, 1)
		var auth []string
		for _, c := range first.Changes {
			if c.Run.Commit == "c24" {
				auth = append(auth, c.ID)
			}
		}
		if len(auth) != 6 {
			t.Fatalf("%d changes at c24, want the 6 of the auth improvement: %+v", len(auth), first.Changes)
		}

		for i := 25; i <= 30; i++ {
			mustRun(t, append(h, "exclude", fmt.Sprintf("run-%02d", i), "--reason", "test")...)
		}
		cut := changesJSON(t, dsn, 0)
		gone := map[string]history.GoneChange{}
		for _, g := range cut.Gone {
			gone[g.ID] = g
		}
		for _, id := range auth {
			g, ok := gone[id]
			if !ok {
				t.Errorf("without runs 25-30, change %s is dropped, not listed as no longer found: %+v", id, cut.Gone)
				continue
			}
			if g.Reason != history.GoneFewRuns || g.Run.Commit != "c24" || g.Run.Index != 24 || g.State != history.StateReported {
				t.Errorf("change %s no longer found: %+v", id, g)
			}
		}
		for _, c := range cut.Changes {
			if c.New || slices.Contains(auth, c.ID) {
				t.Errorf("without runs 25-30: %s (%s) new %v", c.ID, c.String(), c.New)
			}
		}
		text := mustRun(t, append(h, "changes")...)
		if !strings.Contains(text, "reported, no longer found") || !strings.Contains(text, auth[0]) {
			t.Errorf("history changes text lacks the changes no longer found:\n%s", text)
		}
		md := mustRun(t, append(h, "changes", "--format", "markdown")...)
		if !strings.Contains(md, "Reported, no longer found: `auth_register.median` improvement at run 24 (commit c24)") {
			t.Errorf("history changes Markdown lacks the changes no longer found:\n%s", md)
		}
		cutMD := filepath.Join(t.TempDir(), "cut.md")
		mustRun(t, append(h, "report", "--out", cutMD)...)
		if b, err := os.ReadFile(cutMD); err != nil || !strings.Contains(string(b), "## Reported, no longer found") || !strings.Contains(string(b), auth[0]) {
			t.Errorf("history report lacks the changes no longer found (%v):\n%s", err, b)
		}

		// Runs 25 and 26 back: the endpoint's step is decided again, under
		// its ids; the aggregate's, decided only from run 29 on, is
		// no longer found, and says why.
		for i := 25; i <= 26; i++ {
			mustRun(t, append(h, "include", fmt.Sprintf("run-%02d", i))...)
		}
		part := changesJSON(t, dsn, 0)
		found := map[string]bool{}
		for _, c := range part.Changes {
			found[c.ID] = !c.New && c.State == history.StateReported
		}
		gone = map[string]history.GoneChange{}
		for _, g := range part.Gone {
			gone[g.ID] = g
		}
		for _, c := range first.Changes {
			g, isGone := gone[c.ID]
			switch {
			case c.Run.Commit != "c24":
			case c.Endpoint == "auth_register" && !found[c.ID]:
				t.Errorf("with runs 25-26 back, %s (%s) is not found again as reported: %+v", c.ID, c.String(), part.Changes)
			case c.Endpoint == "" && (!isGone || g.Reason != history.GoneResolved && g.Reason != history.GoneBelowLimit):
				t.Errorf("with runs 25-26 back, aggregate %s (%s): gone %v %+v", c.ID, c.String(), isGone, g)
			}
		}

		for i := 27; i <= 30; i++ {
			mustRun(t, append(h, "include", fmt.Sprintf("run-%02d", i))...)
		}
		back := changesJSON(t, dsn, 0)
		if len(back.Gone) != 0 || len(back.Changes) != len(first.Changes) {
			t.Errorf("runs back: %d changes (%d before), %d gone", len(back.Changes), len(first.Changes), len(back.Gone))
		}
		for i, c := range back.Changes {
			if c.ID != first.Changes[i].ID || c.New || c.State != history.StateReported {
				t.Errorf("runs back: %s is %s, new %v, state %s", first.Changes[i].ID, c.ID, c.New, c.State)
			}
		}

		dir := t.TempDir()
		md = reportTable(t, dsn, dir)
		if strings.Count(md, "| reported ") != len(first.Changes) || strings.Contains(md, "| new |") {
			t.Errorf("report after changes reported every change:\n%s", md)
		}

		out := mustRun(t, append(h, "ack", "--runs", "11..26", "--status", "acknowledged", "--note", "upload 20% slower, auth 10% faster")...)
		if n := strings.Count(out, ": acknowledged: upload 20% slower"); n != len(first.Changes) {
			t.Errorf("ack --runs 11..26 set %d of %d:\n%s", n, len(first.Changes), out)
		}
		for _, c := range changesJSON(t, dsn, 0).Changes {
			if c.Status != history.StatusAcknowledged || c.State != history.State(history.StatusAcknowledged) {
				t.Errorf("after ack: %s %s %s", c.ID, c.Status, c.State)
			}
		}
		if md := reportTable(t, dsn, dir); strings.Count(md, "| acknowledged: upload 20% slower, auth 10% faster |") != len(first.Changes) {
			t.Errorf("report after ack:\n%s", md)
		}
	})
}

// reportTable writes history report into dir and returns its change
// points' table.
func reportTable(t *testing.T, dsn, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "history.md")
	mustRun(t, "history", "--history", dsn, "report", "--out", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	start := strings.Index(md, "## Change points")
	end := strings.Index(md[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatalf("no change point table:\n%s", md)
	}
	return md[start : start+1+end]
}

// TestHistoryAckSelection: ack takes several ids at once, a series
// (--figure, as history show names it) and a run range (--runs, by
// index or commit); it sets only changes without a status by selection,
// and refuses what selects nothing, an unknown id (setting none), and a
// range outside the line.
func TestHistoryAckSelection(t *testing.T) {
	files := fixtures.Glob(t, "k6/history-v2.2.0/run-*.ndjson.gz")
	dsn := filepath.Join(t.TempDir(), "history.db")
	h := []string{"history", "--history", dsn}
	mustRun(t, append(append(h, "record", "--time", "2026-01-01 00:00:00"), files...)...)
	rep := changesJSON(t, dsn, 1)
	ids := map[string]string{}
	for _, c := range rep.Changes {
		ids[c.String()] = c.ID
	}
	up, down := ids["document_upload.median"], ids["auth_register.median"]
	if up == "" || down == "" {
		t.Fatalf("fixture changes: %v", ids)
	}
	out := mustRun(t, append(h, "ack", up, down, "--status", "expected")...)
	if !strings.Contains(out, "change "+up+" ") || !strings.Contains(out, "change "+down+" ") || strings.Count(out, "\n") != 2 {
		t.Errorf("ack of two ids:\n%s", out)
	}
	out = mustRun(t, append(h, "ack", "--figure", "document_upload.avg", "--status", "fixed")...)
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, ids["document_upload.avg"]) {
		t.Errorf("ack --figure document_upload.avg:\n%s", out)
	}
	// c11..c11: the upload's step only; its median is expected already,
	// its average fixed: only the max is left.
	out = mustRun(t, append(h, "ack", "--runs", "c11..c11", "--status", "acknowledged")...)
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, ids["document_upload.max"]) {
		t.Errorf("ack --runs c11..c11:\n%s", out)
	}
	for _, args := range [][]string{
		{"ack", "--status", "fixed"},
		{"ack", "--runs", "1..10", "--status", "fixed"},
		{"ack", "--runs", "25..40", "--status", "fixed"},
		{"ack", "--figure", "no_such.figure", "--status", "fixed"},
		{"ack", ids["p95"], "0000000000000000", "--status", "fixed"},
	} {
		if code, _, se := cmdlinetest.Capture(runCLI, append(h, args...)...); code != 2 || se == "" {
			t.Errorf("%v: exit %d (%s), want 2 with a message", args, code, se)
		}
	}
	for _, c := range changesJSON(t, dsn, 0).Changes {
		if c.ID == ids["p95"] && c.Status != history.StatusNew {
			t.Errorf("an ack with an unknown id set %s to %s", c.ID, c.Status)
		}
	}
}

// TestHistoryReportBandFrom: an envelope made from the history's runs
// 21-30 bands every series' chart from run 21 on, the category of that
// run, not across the runs before it.
func TestHistoryReportBandFrom(t *testing.T) {
	files := fixtures.Glob(t, "k6/history-v2.2.0/run-*.ndjson.gz")
	dir := t.TempDir()
	dsn, envPath := filepath.Join(dir, "history.db"), filepath.Join(dir, "envelope.yaml")
	mustRun(t, append([]string{"baseline", "--out", envPath}, files[20:]...)...)
	mustRun(t, append([]string{"history", "--history", dsn, "record", "--time", "2026-01-01 00:00:00"}, files...)...)
	env, err := envelope.ReadFile(envPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := runstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close() //nolint:errcheck // only read
	l := runstore.Line{Test: "history-shared"}
	an, err := history.Analyze(ctx, s, l, changepoint.Config{})
	if err != nil {
		t.Fatal(err)
	}
	hr, err := historyReportData(ctx, s, l, an, an.Report(nil, 1, nil), env)
	if err != nil {
		t.Fatal(err)
	}
	banded := 0
	for _, hs := range hr.Series {
		if hs.Band == nil {
			continue
		}
		banded++
		if hs.BandFrom != 21 {
			t.Errorf("%s: band from run %d, want 21", hs.Key, hs.BandFrom)
		}
	}
	if banded == 0 {
		t.Errorf("no series has the envelope's band")
	}
}
