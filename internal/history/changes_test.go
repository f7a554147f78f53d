package history

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// TestParseStatus: ack sets only the statuses someone gives a change;
// new is no such status, nor is an unknown word.
func TestParseStatus(t *testing.T) {
	for _, v := range AckStatuses() {
		if s, err := ParseStatus(v); err != nil || string(s) != v {
			t.Errorf("%s: %s, %v", v, s, err)
		}
	}
	for _, v := range []string{string(StatusNew), "done", ""} {
		if _, err := ParseStatus(v); err == nil || !strings.Contains(err.Error(), "want one of") {
			t.Errorf("status %q: %v", v, err)
		}
	}
}

// lineOf30 is the analysis of test t's line of 30 runs, commits c01 to
// c30, with a minimum segment of 3 runs, the run at commit excluded left
// out ("" for none); its result is the caller's to set.
func lineOf30(t *testing.T, excluded string) *Analysis {
	t.Helper()
	a, err := changepoint.New(changepoint.Config{MinRuns: 3})
	if err != nil {
		t.Fatal(err)
	}
	an := &Analysis{Test: "t", Analyzer: a}
	for i := range 30 {
		if commit := fmt.Sprintf("c%02d", i+1); commit != excluded {
			an.Runs = append(an.Runs, runstore.Run{ID: int64(i + 1), Commit: commit})
		}
	}
	return an
}

// TestChangeMatch: a change found at another run than the stored one is
// the stored change when it lies in the same series and direction within
// the minimum segment, placed by its commit's current index (a run
// excluded before it moves it).
func TestChangeMatch(t *testing.T) {
	an := lineOf30(t, "c05") // an excluded run: c12 is now run 11
	stored := []runstore.StoredChange{{ID: "s", Figure: "p95", Endpoint: "upload", Commit: "c12", RunIndex: 12, Direction: string(changepoint.Regression)}}
	for _, c := range []struct {
		id    string
		index int
		ep    string
		dir   changepoint.Direction
		want  bool
	}{
		{"s", 20, "other", changepoint.Improvement, true}, // its own id
		{"x", 11, "upload", changepoint.Regression, true},
		{"x", 14, "upload", changepoint.Regression, true},
		{"x", 15, "upload", changepoint.Regression, false}, // 4 runs after c12's run 11
		{"x", 8, "upload", changepoint.Regression, true},
		{"x", 7, "upload", changepoint.Regression, false},
		{"x", 12, "upload", changepoint.Improvement, false},
		{"x", 12, "login", changepoint.Regression, false},
	} {
		ch := changepoint.Change{ID: c.id, Key: changepoint.Key{Figure: "p95", Endpoint: c.ep}, Run: changepoint.RunRef{Index: c.index}, Direction: c.dir}
		if got := an.match(stored, ch) != nil; got != c.want {
			t.Errorf("%+v: matched %v, want %v", c, got, c.want)
		}
	}
}

// TestReportUnreported: a report calls new the changes no stored change
// is, returns them as the store records them, and once told which of
// them this call stored first, keeps those new and dates them all; a
// stored change keeps its id, status and note.
func TestReportUnreported(t *testing.T) {
	an := lineOf30(t, "")
	change := func(id, ep string, at int) changepoint.Change {
		return changepoint.Change{ID: id, Key: changepoint.Key{Figure: "p95", Endpoint: ep}, Direction: changepoint.Regression,
			Run: changepoint.RunRef{Index: at, Commit: fmt.Sprintf("c%02d", at), TestID: fmt.Sprintf("r%02d", at)}, Before: 70, After: 90}
	}
	an.Result.Changes = []changepoint.Change{change("old", "upload", 11), change("x", "login", 20), change("y", "search", 25)}
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	stored := []runstore.StoredChange{{ID: "old", Test: "t", Figure: "p95", Endpoint: "upload", Commit: "c11", RunIndex: 11,
		Direction: string(changepoint.Regression), Status: string(StatusExpected), Note: "cache", FirstReported: at}}
	rep := an.Report(stored, 1, nil)
	if c := rep.Changes[0]; c.New || c.ID != "old" || c.Status != StatusExpected || c.Note != "cache" || c.FirstReported != "2026-02-03T04:05:06Z" {
		t.Errorf("stored change: %+v", c)
	}
	fresh := rep.Unreported()
	if len(fresh) != 2 || fresh[0].ID != "x" || fresh[0].Endpoint != "login" || fresh[0].RunIndex != 20 || fresh[0].TestID != "r20" ||
		fresh[0].Direction != "regression" || fresh[0].After != 90 || fresh[1].ID != "y" || !rep.Changes[1].New || rep.NewRegressions() != 2 {
		t.Fatalf("unreported %+v, changes %+v", fresh, rep.Changes)
	}
	rep.Reported([]bool{true, false}, at.Add(time.Hour))
	if c := rep.Changes[1]; !c.New || c.FirstReported != "2026-02-03T05:05:06Z" {
		t.Errorf("stored first by this call: %+v", c)
	}
	if c := rep.Changes[2]; c.New || c.FirstReported != "2026-02-03T05:05:06Z" {
		t.Errorf("stored first by another call: %+v", c)
	}
	if len(rep.Unreported()) != 0 || rep.NewRegressions() != 1 {
		t.Errorf("after Reported: %d unreported, %d new regressions", len(rep.Unreported()), rep.NewRegressions())
	}
}
