package compare

import (
	"fmt"
	"io"
	"strings"

	"github.com/envelope-dev/envelope/internal/cireport"
)

// failure is a regressed figure's JUnit failure message: the figure, its
// change, its interval and the tolerance.
func (f Figure) failure(confidence float64) string {
	unit := "%"
	if f.Name == "error_rate" {
		unit = "pp"
	}
	s := fmt.Sprintf("%s regressed: %+.2f%s (%.0f%% CI [%+.2f, %+.2f]%s) beyond the tolerance of %.1f%s; baseline %s, candidate %s",
		f.tableLabel(), f.ChangePct, unit, 100*confidence, f.CILowPct, f.CIHighPct, unit, f.TolerancePct, unit, f.cells()[0], f.cells()[1])
	if f.Absolute != nil {
		s += fmt.Sprintf(" (on its own %+.2f%%)", f.Absolute.ChangePct)
	}
	return s
}

// sentence is a figure's verdict in words, for every JUnit case.
func (f Figure) sentence(confidence float64) string {
	if f.Verdict == NoData {
		return fmt.Sprintf("%s: %s (%s)", f.Label(), f.Verdict, f.Note)
	}
	c := f.cells()
	s := fmt.Sprintf("%s: %s; baseline %s, candidate %s, change %s, %.0f%% CI %s, tolerance %s, MDC %s",
		f.tableLabel(), f.Verdict, c[0], c[1], c[2], 100*confidence, c[3], c[5], c[4])
	if f.Against != "" && f.Absolute != nil {
		s += fmt.Sprintf("; judged against %s, run by run; on its own %+.2f%% [%+.2f, %+.2f]", f.Against, f.Absolute.ChangePct, f.Absolute.CILowPct, f.Absolute.CIHighPct)
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
		Header: []string{"Figure", "Baseline", "Candidate", "Change", "CI", "MDC", "Tolerance", "p (Holm)", "Verdict"},
		Notes:  r.notes(),
	}
	for _, s := range r.Sentences {
		t.Lines = append(t.Lines, "- "+s)
	}
	for _, f := range r.Figures {
		t.Rows = append(t.Rows, append([]string{f.tableLabel()}, f.cells()...))
	}
	return cireport.WriteMarkdown(w, t)
}
