package compare

import (
	"fmt"
	"io"
	"strings"

	"github.com/envelope-dev/envelope/internal/cireport"
)

// failure is a regressed figure's JUnit failure message: the figure, its
// change, its interval and the tolerance, then the levels the change is
// of (a figure judged by its ratio to the other endpoints: the ratio's,
// then its own median's with its own change).
func (f Figure) failure(confidence float64) string {
	unit := f.changeUnit()
	c := f.cells()
	s := fmt.Sprintf("%s regressed: %+.2f%s (%.0f%% CI [%+.2f, %+.2f]%s) beyond the tolerance of %.1f%s; ",
		f.tableLabel(), f.ChangePct, unit, 100*confidence, f.CILowPct, f.CIHighPct, unit, f.TolerancePct, unit)
	if f.Ratio != nil && f.Absolute != nil {
		return s + fmt.Sprintf("ratio to the other endpoints %s; own median %s → %s (on its own %+.2f%%)",
			f.ratioCell(), c[0], c[1], f.Absolute.ChangePct)
	}
	return s + fmt.Sprintf("baseline %s, candidate %s", c[0], c[1])
}

// sentence is a figure's verdict in words, for every JUnit case.
func (f Figure) sentence(confidence float64) string {
	if f.Verdict == NoData {
		return fmt.Sprintf("%s: %s (%s)", f.Label(), f.Verdict, f.Note)
	}
	c := f.cells()
	var s string
	if f.Ratio != nil && f.Absolute != nil {
		s = fmt.Sprintf("%s: %s; its ratio to %s %s, change %s, %.0f%% CI %s, tolerance %s, MDC %s; its own median %s → %s, %+.2f%% [%+.2f, %+.2f]",
			f.tableLabel(), f.Verdict, f.Against, f.ratioCell(), c[2], 100*confidence, c[3], c[5], c[4], c[0], c[1], f.Absolute.ChangePct, f.Absolute.CILowPct, f.Absolute.CIHighPct)
	} else {
		s = fmt.Sprintf("%s: %s; baseline %s, candidate %s, change %s, %.0f%% CI %s, tolerance %s, MDC %s",
			f.tableLabel(), f.Verdict, c[0], c[1], c[2], 100*confidence, c[3], c[5], c[4])
	}
	if f.Note != "" {
		s += "; " + f.Note
	}
	return s
}

// Suite is the comparison as a CI report: one case per figure, a
// regression a failure, a figure without data or one its runs cannot
// estimate skipped.
func (r *Result) Suite() cireport.Suite {
	s := cireport.Suite{Name: fmt.Sprintf("envelope %s vs %d candidate run(s)", r.Envelope, len(r.Candidates)), Class: "envelope." + r.Envelope}
	for _, f := range r.Figures {
		c := cireport.Case{Name: f.Label(), Output: f.sentence(r.Confidence)}
		switch f.Verdict {
		case Regression:
			c.Failure = f.failure(r.Confidence)
		case NoData, NotJudgeable:
			c.Skipped = f.Note
			if c.Skipped == "" {
				c.Skipped = "no data"
			}
		}
		s.Cases = append(s.Cases, c)
	}
	return s
}

// WriteJUnit writes the comparison as JUnit XML.
func (r *Result) WriteJUnit(w io.Writer) error { return cireport.WriteJUnit(w, r.Suite()) }

// WriteMarkdown writes the comparison as Markdown: the result, the
// sentences, the table of figures and the notes.
func (r *Result) WriteMarkdown(w io.Writer) error {
	result := "✅ no regression"
	if r.Regressed {
		result = "❌ regression"
	}
	t := cireport.Table{
		Title: fmt.Sprintf("Envelope %s: %s", r.Envelope, result),
		Lines: []string{fmt.Sprintf("%d candidate run(s): %s. Method: %s, %.0f%% confidence, Holm within the headline figures and within each endpoint's%s.",
			len(r.Candidates), strings.Join(r.Candidates, ", "), r.Method, 100*r.Confidence, r.againstLine()), ""},
		Notes: r.notes(),
	}
	for _, s := range r.Sentences {
		t.Lines = append(t.Lines, "- "+s)
	}
	cols := r.columns()
	for _, c := range cols {
		t.Header = append(t.Header, c.markdown)
	}
	t.Rows = r.rows(cols)
	if l := r.ratioLegend(true); l != "" {
		t.Notes = append([]string{l}, t.Notes...)
	}
	return cireport.WriteMarkdown(w, t)
}
