package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// sentences writes the comparison statements for the headline figures:
// "At 100 VUs, aggregate p95 rose 12.3% versus baseline (95% CI …)".
func (r *Result) sentences() {
	lead := ""
	if r.VUs > 0 && r.BaselineVUs > 0 && r.VUs != r.BaselineVUs {
		lead = fmt.Sprintf("At %d VUs, ", r.VUs)
	}
	ci := fmt.Sprintf("%.0f%% CI", 100*r.Confidence)
	for _, f := range r.Figures {
		if f.Endpoint != "" || f.Verdict == NoData {
			continue
		}
		var s string
		switch f.Name {
		case "error_rate":
			s = fmt.Sprintf("the error rate was %.3f%% versus %.3f%% in the baseline (%s %.3f%% to %.3f%%): %s.",
				100*f.Candidate, 100*f.Baseline, ci, 100*f.Baseline+f.CILowPct, 100*f.Baseline+f.CIHighPct, f.Verdict)
		default:
			verb := "rose"
			if f.ChangePct < 0 {
				verb = "fell"
			}
			if math.Abs(f.ChangePct) < 0.05 {
				verb = "was unchanged at"
			}
			s = fmt.Sprintf("%s %s %.1f%% versus baseline (%s %+.1f%% to %+.1f%%, tolerance %.0f%%, MDC %.1f%%): %s.",
				f.Label(), verb, math.Abs(f.ChangePct), ci, f.CILowPct, f.CIHighPct, f.TolerancePct, f.MDCPct, f.Verdict)
			if verb == "was unchanged at" {
				s = strings.Replace(s, "unchanged at 0.0% versus", "unchanged versus", 1)
			}
		}
		if lead != "" {
			s = lead + s
		} else {
			s = strings.ToUpper(s[:1]) + s[1:]
		}
		r.Sentences = append(r.Sentences, s)
	}
}

// WriteText writes the sentences and a table of every figure.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Envelope %s vs %d candidate run(s): %s\n", r.Envelope, len(r.Candidates), strings.Join(r.Candidates, ", "))
	fmt.Fprintf(&b, "Method: %s, %.0f%% confidence, Holm within the headline figures and within each endpoint's%s.\n\n", r.Method, 100*r.Confidence, r.againstLine())
	for _, s := range r.Sentences {
		fmt.Fprintf(&b, "%s\n", s)
	}
	b.WriteString("\n")
	// The table is built in memory, where writes cannot fail; the one write
	// that can is the final WriteString to w.
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	cols := r.columns()
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = c.text
	}
	_, _ = fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range r.rows(cols) {
		_, _ = fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
	if l := r.ratioLegend(false); l != "" {
		b.WriteString("\n" + l + "\n")
	}
	if notes := r.notes(); len(notes) > 0 {
		b.WriteString("\nNotes:\n- " + strings.Join(notes, "\n- ") + "\n")
	}
	if r.Regressed {
		b.WriteString("\nResult: REGRESSION\n")
	} else {
		b.WriteString("\nResult: no regression\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// column is one column of the table of figures: its header in text
// and in Markdown, and a figure's cell in it.
type column struct {
	text, markdown string
	cell           func(f Figure) string
}

// columns are the table's columns. A median judged against the run's
// other endpoints has two levels: its own (baseline, candidate, change)
// and its ratio to the other endpoints, which is what is judged. When
// any figure was judged so, the table shows the ratio's levels and
// change in columns of their own, right after the figure's own values
// and change, so that each change stands beside the levels it is the
// change of, and the interval, MDC, p and verdict follow the change they
// judge (the ratio's, where there is one).
func (r *Result) columns() []column {
	cols := []column{
		{"FIGURE", "Figure", Figure.tableLabel},
		{"BASELINE", "Baseline", func(f Figure) string { return f.cells()[0] }},
		{"CANDIDATE", "Candidate", func(f Figure) string { return f.cells()[1] }},
		{"CHANGE", "Change", Figure.ownChangeCell},
	}
	if r.hasRatio() {
		cols = append(cols,
			column{"RATIO TO OTHERS", "Ratio to other endpoints (baseline → candidate)", Figure.ratioCell},
			column{"RATIO CHANGE", "Ratio change", Figure.ratioChangeCell})
	}
	for i, h := range [][2]string{{"CI", "CI"}, {"MDC", "MDC"}, {"TOL", "Tolerance"}, {"P(HOLM)", "p (Holm)"}, {"VERDICT", "Verdict"}} {
		cols = append(cols, column{h[0], h[1], func(f Figure) string { return f.cells()[3+i] }})
	}
	return cols
}

// rows are every figure's cells in the columns' order.
func (r *Result) rows(cols []column) [][]string {
	out := make([][]string, 0, len(r.Figures))
	for _, f := range r.Figures {
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = c.cell(f)
		}
		out = append(out, row)
	}
	return out
}

// hasRatio says whether any figure was judged by its ratio to the run's
// other endpoints.
func (r *Result) hasRatio() bool {
	for _, f := range r.Figures {
		if f.Ratio != nil && f.Verdict != NoData {
			return true
		}
	}
	return false
}

// ratioLegend says how to read a row with a ratio, naming the columns by
// their headers (markdown: the Markdown ones); "" when no figure has one.
func (r *Result) ratioLegend(markdown bool) string {
	if !r.hasRatio() {
		return ""
	}
	name := map[string]string{}
	for _, c := range r.columns() {
		name[c.text] = c.text
		if markdown {
			name[c.text] = c.markdown
		}
	}
	return fmt.Sprintf("A median judged against the run's other endpoints: %s, %s and %s are its own; %s is its median over the other endpoints' weighted geometric mean (the weights in the notes), in the baseline and in the candidates, and %s is that ratio's change, which %s, %s, %s and %s judge. In the other rows they judge %s.",
		name["BASELINE"], name["CANDIDATE"], name["CHANGE"], name["RATIO TO OTHERS"], name["RATIO CHANGE"],
		name["CI"], name["MDC"], name["P(HOLM)"], name["VERDICT"], name["CHANGE"])
}

// cells are a figure's judged columns after its label: baseline,
// candidate, change, interval, MDC, tolerance, Holm p, verdict. The
// change, interval and MDC are those of what was judged: for a figure
// with a Ratio, the ratio's.
func (f Figure) cells() []string {
	if f.Verdict == NoData {
		return []string{"-", "-", "-", "-", "-", "-", "-", string(f.Verdict)}
	}
	unit := f.changeUnit()
	base, cand := fmt.Sprintf("%.2f %s", f.Baseline, f.Unit), fmt.Sprintf("%.2f %s", f.Candidate, f.Unit)
	if f.Name == "error_rate" {
		base, cand = fmt.Sprintf("%.3f%%", 100*f.Baseline), fmt.Sprintf("%.3f%%", 100*f.Candidate)
	}
	return []string{base, cand, fmt.Sprintf("%+.2f%s", f.ChangePct, unit), fmt.Sprintf("[%+.2f, %+.2f]", f.CILowPct, f.CIHighPct),
		fmt.Sprintf("%.2f%s", f.MDCPct, unit), fmt.Sprintf("%.1f%s", f.TolerancePct, unit), pCell(f.PHolm), string(f.Verdict)}
}

// changeUnit is the unit of the figure's changes: percentage points for
// the error rate, percent for every other figure.
func (f Figure) changeUnit() string {
	if f.Name == "error_rate" {
		return "pp"
	}
	return "%"
}

// ownChangeCell is the change of the figure's own values (its Baseline
// and Candidate): for a figure judged by its ratio, its own change.
func (f Figure) ownChangeCell() string {
	switch {
	case f.Verdict == NoData:
		return "-"
	case f.Ratio != nil && f.Absolute != nil:
		return fmt.Sprintf("%+.2f%%", f.Absolute.ChangePct)
	}
	return f.cells()[2]
}

// ratioCell is the figure's ratio to the other endpoints, baseline →
// candidate; "-" for a figure judged on its own.
func (f Figure) ratioCell() string {
	if f.Ratio == nil || f.Verdict == NoData {
		return "-"
	}
	return ratioLevel(f.Ratio.Baseline) + " → " + ratioLevel(f.Ratio.Candidate)
}

// ratioChangeCell is the change of the figure's ratio to the other
// endpoints, the change judged; "-" for a figure judged on its own.
func (f Figure) ratioChangeCell() string {
	if f.Ratio == nil || f.Verdict == NoData {
		return "-"
	}
	return f.cells()[2]
}

// ValueCells are the figure's baseline, candidate and change as compare's
// tables show them, for a report that shows a figure in fewer columns:
// for a figure judged by its ratio to the other endpoints, the change is
// its own, then the judged ratio's.
func (f Figure) ValueCells() (baseline, candidate, change string) {
	c := f.cells()
	change = f.ownChangeCell()
	if r := f.ratioChangeCell(); r != "-" {
		change += " (against the other endpoints " + r + ")"
	}
	return c[0], c[1], change
}

// ratioLevel is a ratio to the other endpoints, with four significant
// digits: enough that the change between two of them reads to 0.1%.
func ratioLevel(x float64) string { return fmt.Sprintf("%#.4g", x) }

// pCell is an adjusted p-value's cell: "-" for a figure not tested (a
// percentile its runs cannot estimate).
func pCell(p float64) string {
	if math.IsNaN(p) {
		return "-"
	}
	return fmt.Sprintf("%.3g", p)
}

// notes are each figure's note and the warnings.
func (r *Result) notes() []string {
	var notes []string
	for _, f := range r.Figures {
		if f.Against != "" && f.Absolute != nil {
			notes = append(notes, fmt.Sprintf("%s: judged against %s, run by run: %+.1f%% (%.0f%% CI %+.1f%% to %+.1f%%); on its own %+.1f%% (%+.1f%% to %+.1f%%)",
				f.Label(), f.Against, f.ChangePct, 100*r.Confidence, f.CILowPct, f.CIHighPct, f.Absolute.ChangePct, f.Absolute.CILowPct, f.Absolute.CIHighPct))
		}
		if f.Note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", f.Label(), f.Note))
		}
	}
	for _, wn := range r.Warnings {
		notes = append(notes, "warning: "+wn)
	}
	return notes
}

// WriteJSON writes the result; NaN p-values (untested figures) are null.
func (r *Result) WriteJSON(w io.Writer) error {
	type fig struct {
		Figure
		P     *float64 `json:"p"`
		PHolm *float64 `json:"p_holm"`
	}
	out := struct {
		*Result
		Figures []fig `json:"figures"`
	}{Result: r}
	for _, f := range r.Figures {
		x := fig{Figure: f}
		if !math.IsNaN(f.P) {
			p, ph := f.P, f.PHolm
			x.P, x.PHolm = &p, &ph
		}
		out.Figures = append(out.Figures, x)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// tableLabel is the figure's label in tables and messages: an endpoint
// figure judged against the run's other endpoints says so.
func (f Figure) tableLabel() string {
	if f.Against != "" {
		return f.Label() + " vs other endpoints"
	}
	return f.Label()
}

// againstLine is the method line's clause for endpoint figures judged
// against the run's other endpoints; empty when none was.
func (r *Result) againstLine() string {
	for _, f := range r.Figures {
		if f.Against != "" {
			return "; an endpoint's median judged against the run's other endpoints (a level every endpoint of a run shares cancels)"
		}
	}
	return ""
}
