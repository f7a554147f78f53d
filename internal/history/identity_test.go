package history

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// cp is a change of figure fig of endpoint ep at run at of an's line,
// in direction dir, from 100 to 120.
func cp(an *Analysis, id string, fig figures.Name, ep string, at int, dir changepoint.Direction) changepoint.Change {
	return changepoint.Change{ID: id, Key: changepoint.Key{Test: "t", Figure: fig, Endpoint: ep}, Direction: dir,
		Run: an.Ref(at), Before: 100, After: 120, Change: 0.2}
}

// TestSince: what recording runs changed. A change found within the
// minimum segment of one found before (same series and direction) is
// that change, moved when its run differs; of two found before near one
// found now, the nearer is it and the other merged into it; one found
// before and not now says why: a suspected step near it is below the
// limit, a step in another latency figure of its endpoint is too, one
// among the line's last runs has too few runs after it, one whose commit
// left the line says so, else it is resolved. A stored change keeps its
// id and state in every list.
func TestSince(t *testing.T) {
	const reg, imp = changepoint.Regression, changepoint.Improvement
	before := lineOf30(t, "")
	before.Runs = before.Runs[:29] // c01–c29: run 30 is the one recorded
	bf := before
	before.Result.Changes = []changepoint.Change{
		cp(bf, "a", "median", "upload", 11, reg),
		cp(bf, "d", "median", "upload", 13, reg),
		cp(bf, "b", "p95", "", 20, imp),
		cp(bf, "f", "p95", "login", 15, reg),
		cp(bf, "e", "rps", "", 29, imp),
		cp(bf, "r", "median", "search", 8, reg),
		cp(bf, "k", "avg", "cart", 5, reg),
		cp(bf, "s", "max", "cart", 18, reg),
	}
	now := lineOf30(t, "c05") // c05 excluded since: c06 is run 5, c30 run 29
	now.Result.Changes = []changepoint.Change{
		cp(now, "a2", "median", "upload", 11, reg), // c12: a moved from c11 (now run 10)
		cp(now, "s", "max", "cart", 17, reg),       // c18, now run 17: as before
		cp(now, "g", "p99", "", 3, reg),            // found only now
		cp(now, "f2", "median", "login", 14, reg),  // c15: f's endpoint, another figure
	}
	now.Result.Suspected = []changepoint.Suspect{{Key: changepoint.Key{Figure: "p95"}, Run: changepoint.RunRef{Index: 19}, Direction: imp, P: 0.001, Decide: 0.0002}}
	stored := []runstore.StoredChange{{ID: "a", Figure: "median", Endpoint: "upload", Commit: "c11", RunIndex: 11, Direction: "regression", Status: "new"},
		{ID: "b", Figure: "p95", Commit: "c20", RunIndex: 20, Direction: "improvement", Status: "new"}}
	rc := now.Since(before, stored, []int64{30})

	if len(rc.New) != 2 || rc.New[0].ID != "g" || rc.New[0].State != State(StatusNew) || rc.New[1].ID != "f2" {
		t.Errorf("new: %+v", rc.New)
	}
	if len(rc.Moved) != 1 || rc.Moved[0].ID != "a" || rc.Moved[0].State != StateReported || rc.Moved[0].From.Commit != "c11" || rc.Moved[0].Run.Commit != "c12" {
		t.Errorf("moved: %+v", rc.Moved)
	}
	if rc.Kept != 1 || rc.Unreported != 3 {
		t.Errorf("kept %d, unreported %d", rc.Kept, rc.Unreported)
	}
	want := map[string]struct {
		reason GoneReason
		detail string
		state  State
	}{
		"d": {GoneMerged, "into a at run 11", State(StatusNew)},
		"b": {GoneBelowLimit, "suspected at run 19", StateReported},
		"f": {GoneBelowLimit, "shows in median", State(StatusNew)},
		"e": {GoneFewRuns, "2 from run 28 on", State(StatusNew)},
		"r": {GoneResolved, "no regression step decided or suspected near run 7", State(StatusNew)},
		"k": {GoneLeftLine, "no run of c05", State(StatusNew)},
	}
	if len(rc.Gone) != len(want) {
		t.Errorf("gone: %+v", rc.Gone)
	}
	for _, g := range rc.Gone {
		w, ok := want[g.ID]
		if !ok || g.Reason != w.reason || !strings.Contains(g.Detail, w.detail) || g.State != w.state {
			t.Errorf("gone %s: %s %q %s, want %+v", g.ID, g.Reason, g.Detail, g.State, w)
		}
	}
	var b strings.Builder
	if err := rc.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range []string{"2 new, 1 moved, 6 no longer found, 1 as before; 3 not reported yet", "moved  a ", "from run 10 (c11)", "gone   d ", "merged: into a at run 11", "too few runs after it: 2 from run 28 on, a change needs 3"} {
		if !strings.Contains(out, line) {
			t.Errorf("text lacks %q:\n%s", line, out)
		}
	}
}

// TestReportGone: history changes lists the reported changes without a
// status it no longer finds, with why; an acknowledged one it does not.
func TestReportGone(t *testing.T) {
	an := lineOf30(t, "")
	an.Result.Changes = []changepoint.Change{cp(an, "x", "p95", "upload", 12, changepoint.Regression)}
	stored := []runstore.StoredChange{
		{ID: "x", Figure: "p95", Endpoint: "upload", Commit: "c12", RunIndex: 12, Direction: "regression", Status: "new"},
		{ID: "y", Figure: "median", Endpoint: "login", Commit: "c20", RunIndex: 20, Direction: "regression", Status: "new"},
		{ID: "z", Figure: "median", Endpoint: "cart", Commit: "c21", RunIndex: 21, Direction: "regression", Status: string(StatusFalsePositive)},
	}
	rep := an.Report(stored, 1, nil)
	if len(rep.Gone) != 1 || rep.Gone[0].ID != "y" || rep.Gone[0].Reason != GoneResolved || rep.Gone[0].Run.Commit != "c20" || rep.Gone[0].Series != "login.median" {
		t.Errorf("gone: %+v", rep.Gone)
	}
	if c := rep.Changes[0]; c.State != StateReported || c.New {
		t.Errorf("stored change found: %+v", c)
	}
	if rep = an.Report(stored, 21, nil); len(rep.Gone) != 0 {
		t.Errorf("--since run 21 lists a change gone at run 20: %+v", rep.Gone)
	}
}
