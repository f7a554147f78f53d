package history

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// MovedChange is a change found before and now at another run: the
// same change, its run moved while the runs after it are few.
type MovedChange struct {
	ReportedChange
	From changepoint.RunRef `json:"from"`
}

// RunChanges is what recording runs changed in a line's change points:
// the changes found now and not before (new, or reported before and
// back), those that moved, those found before and not now (with why),
// and the outlier runs not found before.
type RunChanges struct {
	Test string
	// Runs is the line's length; Latest its latest run.
	Runs   int
	Latest changepoint.RunRef
	// New are found now and not before; Again, found now and not before
	// but reported before (the same change back, under its id).
	New   []ReportedChange
	Again []ReportedChange
	Moved []MovedChange
	Gone  []GoneChange
	// Kept counts the changes found before and now at the same run;
	// Unreported the line's changes no `history changes` has reported.
	Kept, Unreported int
	// Outliers are the outlier runs not found before.
	Outliers []changepoint.Outlier
}

// Since compares the analysis with before, the line's analysis before
// the runs fresh (their ids) were recorded (nil: none), with the stored
// lifecycle: a change found now is the one found before within the
// minimum segment of its series and direction (moved when its run
// differs); one found before and not now is gone, with why.
func (an *Analysis) Since(before *Analysis, stored []runstore.StoredChange, fresh []int64) *RunChanges {
	rep := an.Report(stored, 1, nil)
	rc := &RunChanges{Test: an.Test, Runs: len(an.Runs), Latest: an.Ref(len(an.Runs))}
	var prev []changepoint.Change
	if before != nil {
		prev = before.Result.Changes
	}
	// at places a change found before in the line as it is now: by its
	// commit (or test id), 0 when that run left the line.
	at := func(p changepoint.Change) int {
		if ref := cmp.Or(p.Run.Commit, p.Run.TestID); ref != "" {
			return an.IndexOf(ref)
		}
		return p.Run.Index
	}
	taken := make([]bool, len(prev))
	shown := map[string]string{}
	for i, c := range an.Result.Changes {
		shown[c.ID] = rep.Changes[i].ID
		best, bestD := -1, an.near()+1
		for j, p := range prev {
			if taken[j] || p.Figure != c.Figure || p.Endpoint != c.Endpoint || p.Direction != c.Direction {
				continue
			}
			if d := abs(at(p) - c.Run.Index); at(p) > 0 && d < bestD {
				best, bestD = j, d
			}
		}
		switch {
		case best < 0 && !rep.Changes[i].New:
			rc.Again = append(rc.Again, rep.Changes[i])
		case best < 0:
			rc.New = append(rc.New, rep.Changes[i])
		case at(prev[best]) != c.Run.Index:
			taken[best] = true
			rc.Moved = append(rc.Moved, MovedChange{ReportedChange: rep.Changes[i], From: an.Ref(at(prev[best]))})
		default:
			taken[best] = true
			rc.Kept++
		}
		if rep.Changes[i].New {
			rc.Unreported++
		}
	}
	for j, p := range prev {
		if taken[j] {
			continue
		}
		g := GoneChange{ID: p.ID, Key: p.Key, Series: p.String(), Run: p.Run, Dir: p.Direction, Before: p.Before, After: p.After,
			State: state(false, StatusNew)}
		if m := before.match(unshown(stored, rep.Changes), p); m != nil {
			g.ID, g.State = m.ID, state(true, Status(m.Status))
		}
		if i := at(p); i == 0 {
			g.Reason, g.Detail = GoneLeftLine, fmt.Sprintf("no run of %s in the line", cmp.Or(p.Run.Commit, p.Run.TestID))
		} else {
			g.Run = an.Ref(i)
			g.Reason, g.Detail = an.whyGone(p.Key, p.Direction, i, shown)
		}
		rc.Gone = append(rc.Gone, g)
	}
	// An outlier run is told once: when its run is recorded or when the
	// runs after it first show it.
	known := map[string]bool{}
	if before != nil {
		for _, o := range before.Result.Outliers {
			known[o.String()+"@"+cmp.Or(o.Run.Commit, o.Run.TestID)] = true
		}
	}
	for _, o := range an.Result.Outliers {
		if slices.Contains(fresh, an.Runs[o.Run.Index-1].ID) || !known[o.String()+"@"+cmp.Or(o.Run.Commit, o.Run.TestID)] {
			rc.Outliers = append(rc.Outliers, o)
		}
	}
	return rc
}

// unshown are the stored changes none of the found ones is.
func unshown(stored []runstore.StoredChange, found []ReportedChange) []runstore.StoredChange {
	return slices.DeleteFunc(slices.Clone(stored), func(m runstore.StoredChange) bool {
		return slices.ContainsFunc(found, func(c ReportedChange) bool { return c.ID == m.ID })
	})
}

// Changed says whether the runs recorded changed any change point.
func (rc *RunChanges) Changed() bool {
	return len(rc.New)+len(rc.Again)+len(rc.Moved)+len(rc.Gone) > 0
}

// WriteText writes what the recorded runs changed, for people: a
// summary line, then one row per change point found, moved or gone, and
// the outlier runs among them.
func (rc *RunChanges) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { _, _ = fmt.Fprintf(tw, format, a...) }
	again := ""
	if len(rc.Again) > 0 {
		again = fmt.Sprintf(", %d found again", len(rc.Again))
	}
	p("change points of %s at run %d (%s), %d runs: %d new%s, %d moved, %d no longer found, %d as before; %d not reported yet",
		rc.Test, rc.Latest.Index, dash(cmp.Or(rc.Latest.Commit, rc.Latest.TestID)), rc.Runs, len(rc.New), again, len(rc.Moved), len(rc.Gone), rc.Kept, rc.Unreported)
	if rc.Unreported > 0 {
		p(" (`envelope history changes` reports them)")
	}
	p("\n")
	if rc.Changed() {
		p("\nwhat\tid\tseries\trun\tcommit\tdirection\tbefore\tafter\tchange\tp\tstate\t\n")
		row := func(what string, ch ReportedChange, note string) {
			p("%s\t%s\t%s\t%d\t%s\t%s\t%.4g\t%.4g\t%s\t%.2g\t%s%s\t\n", what, ch.ID, ch.Key, ch.Run.Index, dash(ch.Run.Commit), ch.Direction,
				ch.Before, ch.After, pct(ch.Change.Change), ch.P, ch.State, note)
		}
		for _, ch := range rc.New {
			row("new", ch, "")
		}
		for _, ch := range rc.Again {
			row("again", ch, "")
		}
		for _, m := range rc.Moved {
			row("moved", m.ReportedChange, fmt.Sprintf(", from run %d (%s)", m.From.Index, dash(m.From.Commit)))
		}
		for _, g := range rc.Gone {
			p("gone\t%s\t%s\t%d\t%s\t%s\t%.4g\t%.4g\t%s\t\t%s, %s\t\n", g.ID, g.Series, g.Run.Index, dash(g.Run.Commit), g.Dir,
				g.Before, g.After, pct(relChange(g.Before, g.After)), g.State, g)
		}
	}
	if len(rc.Outliers) > 0 {
		p("\noutlier run\tseries\tcommit\tvalue\tsegment\tchange\tsigmas\t\n")
		for _, o := range rc.Outliers {
			p("%d\t%s\t%s\t%.4g\t%.4g\t%s\t%.1f\t\n", o.Run.Index, o.Key, dash(o.Run.Commit), o.Value, o.SegmentMean, pct(o.Change), o.Sigmas)
		}
	}
	return tw.Flush()
}

// relChange is after/before − 1, 0 when before is 0.
func relChange(before, after float64) float64 {
	if before == 0 {
		return 0
	}
	return after/before - 1
}
