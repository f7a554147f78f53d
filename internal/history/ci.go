package history

import (
	"fmt"
	"io"
	"strings"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/cireport"
)

// Table is the report as Markdown: one row per change point, then the
// outliers and the drift over tolerance as notes.
func (r *ChangesReport) Table() cireport.Table {
	t := cireport.Table{
		Title: "Change points: " + r.Test,
		Lines: []string{fmt.Sprintf("%d runs on the main line: %d change points, %d of them new regressions; %d outlier runs.",
			r.Runs, len(r.Changes), r.NewRegressions(), len(r.Outliers))},
	}
	if len(r.Changes) > 0 {
		t.Header = []string{"Series", "Run", "Commit", "Direction", "Before", "After", "Change", "Status", "Id"}
		for _, ch := range r.Changes {
			t.Rows = append(t.Rows, []string{"`" + ch.String() + "`", fmt.Sprint(ch.Run.Index), dash(ch.Run.Commit),
				string(ch.Direction), fmt.Sprintf("%.4g", ch.Before), fmt.Sprintf("%.4g", ch.After), pct(ch.Change.Change), ch.statusText(), "`" + ch.ID + "`"})
		}
	}
	for _, g := range r.Gone {
		t.Notes = append(t.Notes, fmt.Sprintf("Reported, no longer found: `%s` %s at run %d (commit %s), `%s`: %s.",
			g.Series, g.Dir, g.Run.Index, dash(g.Run.Commit), g.ID, g))
	}
	for _, o := range r.Outliers {
		t.Notes = append(t.Notes, fmt.Sprintf("Outlier run %d (commit %s): `%s` %.4g against its segment's %.4g (%s, %.1fσ), not a change.",
			o.Run.Index, dash(o.Run.Commit), o.Key, o.Value, o.SegmentMean, pct(o.Change), o.Sigmas))
	}
	for _, d := range overTolerance(r.Drift) {
		t.Notes = append(t.Notes, fmt.Sprintf("Drift over tolerance: `%s` %s since run %d (interval %s to %s).",
			d.Key, pct(d.Change), d.Since.Index, pct(d.CI[0]), pct(d.CI[1])))
	}
	return t
}

// WriteMarkdown writes the report as Markdown, for a pull-request
// comment or $GITHUB_STEP_SUMMARY.
func (r *ChangesReport) WriteMarkdown(w io.Writer) error { return cireport.WriteMarkdown(w, r.Table()) }

// Suite is the report as a CI report: one test case per series; a new
// regression change point fails its series' case.
func (r *ChangesReport) Suite() cireport.Suite {
	s := cireport.Suite{Name: "history changes: " + r.Test, Class: "history.changes." + r.Test}
	bySeries := map[string][]ReportedChange{}
	var order []string
	add := func(name string) {
		if _, ok := bySeries[name]; !ok {
			bySeries[name] = nil
			order = append(order, name)
		}
	}
	for _, d := range r.Drift {
		add(d.String())
	}
	for _, ch := range r.Changes {
		name := ch.String()
		add(name)
		bySeries[name] = append(bySeries[name], ch)
	}
	for _, name := range order {
		cs := cireport.Case{Name: name, Output: "no change point"}
		var lines, fails []string
		for _, ch := range bySeries[name] {
			line := fmt.Sprintf("%s at run %d (commit %s): %.4g → %.4g (%s, p %.2g), %s, id %s", ch.Direction, ch.Run.Index,
				dash(ch.Run.Commit), ch.Before, ch.After, pct(ch.Change.Change), ch.P, ch.statusText(), ch.ID)
			lines = append(lines, line)
			if ch.New && ch.Direction == changepoint.Regression {
				fails = append(fails, line)
			}
		}
		if len(lines) > 0 {
			cs.Output = strings.Join(lines, "\n")
		}
		if len(fails) > 0 {
			cs.Failure = "new " + strings.Join(fails, "; ")
		}
		s.Cases = append(s.Cases, cs)
	}
	return s
}

// WriteJUnit writes the report as JUnit XML.
func (r *ChangesReport) WriteJUnit(w io.Writer) error { return cireport.WriteJUnit(w, r.Suite()) }
