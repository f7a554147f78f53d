package history

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/envelope-dev/envelope/internal/cireport"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// timeText is a run's place in history as text, "-" when unknown.
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// SeriesJSON is `history show --format json`: one figure's runs in
// commit-time order, index 1-based.
type SeriesJSON struct {
	Test     string            `json:"test"`
	Figure   figures.Name      `json:"figure"`
	Endpoint string            `json:"endpoint,omitempty"`
	Unit     string            `json:"unit"`
	Branch   string            `json:"branch,omitempty"`
	Runs     []SeriesPointJSON `json:"runs"`
}

// SeriesPointJSON is one run of SeriesJSON.
type SeriesPointJSON struct {
	Index    int               `json:"index"`
	Run      int64             `json:"run"`
	TestID   string            `json:"testid"`
	Commit   string            `json:"commit"`
	Time     string            `json:"time"`
	Value    float64           `json:"value"`
	Count    int64             `json:"count,omitempty"`
	Interval *figures.Interval `json:"interval,omitempty"`
	Excluded string            `json:"excluded,omitempty"` // the reason, when excluded
}

// SeriesView is one figure's series as show prints it.
type SeriesView struct {
	Test, Endpoint, Branch string
	Figure                 figures.Name
	Points                 []runstore.Point
}

// JSON is the view as SeriesJSON.
func (v SeriesView) JSON() SeriesJSON {
	out := SeriesJSON{Test: v.Test, Figure: v.Figure, Endpoint: v.Endpoint, Unit: v.Figure.Def().Unit, Branch: v.Branch, Runs: []SeriesPointJSON{}}
	for _, p := range v.Points {
		j := SeriesPointJSON{Index: p.Index, Run: p.Run.ID, TestID: p.Run.TestID, Commit: p.Run.Commit,
			Time: timeText(p.Run.Time()), Value: p.Value, Count: p.Count, Interval: p.CI}
		if p.Run.Excluded {
			j.Excluded = p.Run.Reason
		}
		out.Runs = append(out.Runs, j)
	}
	return out
}

// Write writes the view as text, json or csv.
func (v SeriesView) Write(w io.Writer, format string) error {
	switch format {
	case "json":
		return v.writeJSON(w)
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"index", "run", "testid", "commit", "time", "value", "count", "interval_low", "interval_high", "excluded"})
		for _, p := range v.Points {
			lo, hi := "", ""
			if p.CI != nil {
				lo, hi = num(p.CI.Low), num(p.CI.High)
			}
			_ = cw.Write([]string{strconv.Itoa(p.Index), strconv.FormatInt(p.Run.ID, 10), p.Run.TestID, p.Run.Commit,
				timeText(p.Run.Time()), num(p.Value), countText(p.Count), lo, hi, p.Run.Reason})
		}
		cw.Flush()
		return cw.Error()
	case "markdown":
		return v.writeMarkdown(w)
	}
	if _, err := fmt.Fprintln(w, v.heading()); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "#\trun\tcommit\ttime\ttestid\tvalue\tcount\tinterval\t")
	for _, p := range v.Points {
		ci := ""
		if p.CI != nil {
			ci = "[" + num(p.CI.Low) + ", " + num(p.CI.High) + "]"
		}
		val := num(p.Value)
		if p.Run.Excluded {
			val += " (excluded: " + p.Run.Reason + ")"
		}
		_, _ = fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Index, p.Run.ID, dash(p.Run.Commit), dash(timeText(p.Run.Time())),
			dash(p.Run.TestID), val, countText(p.Count), ci)
	}
	return tw.Flush()
}

// heading says what the series is.
func (v SeriesView) heading() string {
	name := figures.Key{Endpoint: v.Endpoint, Figure: v.Figure}.String()
	line := "main line"
	if v.Branch != "" {
		line = "branch " + v.Branch
	}
	return fmt.Sprintf("%s of test %s (%s), %s: %d runs in commit-time order", name, v.Test, v.Figure.Def().Unit, line, len(v.Points))
}

// writeMarkdown writes the series as a Markdown table.
func (v SeriesView) writeMarkdown(w io.Writer) error {
	t := cireport.Table{Title: v.heading(), Header: []string{"#", "run", "commit", "time", "testid", "value", "count", "interval", "excluded"}}
	for _, p := range v.Points {
		ci := ""
		if p.CI != nil {
			ci = "[" + num(p.CI.Low) + ", " + num(p.CI.High) + "]"
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(p.Index), strconv.FormatInt(p.Run.ID, 10), p.Run.Commit, timeText(p.Run.Time()),
			p.Run.TestID, num(p.Value), countText(p.Count), ci, p.Run.Reason})
	}
	return cireport.WriteMarkdown(w, t)
}

// WriteRuns writes runs, in the order given, as text, json or csv.
func WriteRuns(w io.Writer, runs []runstore.Run, format string) error {
	switch format {
	case "json":
		type runJSON struct {
			Index      int     `json:"index"`
			Run        int64   `json:"run"`
			Test       string  `json:"test"`
			TestID     string  `json:"testid"`
			Commit     string  `json:"commit"`
			CommitTime string  `json:"commit_time,omitempty"`
			Branch     string  `json:"branch,omitempty"`
			Version    string  `json:"version,omitempty"`
			RunTime    string  `json:"run_time,omitempty"`
			DurationS  float64 `json:"duration_s,omitempty"`
			VUs        int     `json:"vus,omitempty"`
			Source     string  `json:"source"`
			Format     string  `json:"format"`
			SHA256     string  `json:"sha256"`
			Note       string  `json:"note,omitempty"`
			Excluded   string  `json:"excluded,omitempty"`
		}
		out := []runJSON{}
		for i, r := range runs {
			out = append(out, runJSON{i + 1, r.ID, r.Test, r.TestID, r.Commit, timeText(r.CommitTime), r.Branch, r.Version,
				timeText(r.RunTime), r.DurationS, r.VUs, r.SourceFile, r.Format, r.SHA256, r.Note, r.Reason})
		}
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(out)
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"index", "run", "test", "testid", "commit", "commit_time", "branch", "version", "run_time", "source", "note", "excluded"})
		for i, r := range runs {
			_ = cw.Write([]string{strconv.Itoa(i + 1), strconv.FormatInt(r.ID, 10), r.Test, r.TestID, r.Commit, timeText(r.CommitTime),
				r.Branch, r.Version, timeText(r.RunTime), r.SourceFile, r.Note, r.Reason})
		}
		cw.Flush()
		return cw.Error()
	}
	if format == "markdown" {
		t := cireport.Table{Title: fmt.Sprintf("%d runs in commit-time order", len(runs)),
			Header: []string{"#", "run", "commit", "time", "branch", "version", "testid", "source", "note", "excluded"}}
		for i, r := range runs {
			t.Rows = append(t.Rows, []string{strconv.Itoa(i + 1), strconv.FormatInt(r.ID, 10), r.Commit, timeText(r.Time()),
				r.Branch, r.Version, r.TestID, r.SourceFile, r.Note, r.Reason})
		}
		return cireport.WriteMarkdown(w, t)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "#\trun\tcommit\ttime\tbranch\ttestid\tsource\tnote\t")
	for i, r := range runs {
		note := r.Note
		if r.Excluded {
			note = strings.TrimSpace("excluded: " + r.Reason + "; " + note)
			note = strings.TrimSuffix(note, ";")
		}
		_, _ = fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", i+1, r.ID, dash(r.Commit), dash(timeText(r.Time())),
			dash(r.Branch), dash(r.TestID), r.SourceFile, note)
	}
	return tw.Flush()
}

// WriteBranches writes the branches a test's runs were recorded on as a
// table, each with the line it belongs to: the main line takes the
// main branch's runs and those of no known branch.
func WriteBranches(w io.Writer, bs []runstore.Branch, mainBranch string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "branch\truns\tlatest\tline\t")
	for _, b := range bs {
		name, line := b.Name, "branch"
		switch b.Name {
		case "":
			name, line = "(none)", "main"
		case mainBranch:
			line = "main"
		}
		latest := "-"
		if !b.Latest.IsZero() {
			latest = b.Latest.Format(time.RFC3339)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t\n", name, b.Runs, latest, line)
	}
	return tw.Flush()
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func countText(n int64) string {
	if n <= 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeJSON writes JSON() as encoding/json would, without reflection:
// a long series is written several times faster.
func (v SeriesView) writeJSON(w io.Writer) error {
	j := v.JSON()
	b := make([]byte, 0, 128+160*len(j.Runs))
	str := func(b []byte, s string) []byte {
		q, _ := json.Marshal(s) // a string always marshals
		return append(b, q...)
	}
	b = append(b, `{"test":`...)
	b = str(b, j.Test)
	b = append(b, `,"figure":`...)
	b = str(b, string(j.Figure))
	if j.Endpoint != "" {
		b = append(b, `,"endpoint":`...)
		b = str(b, j.Endpoint)
	}
	b = append(b, `,"unit":`...)
	b = str(b, j.Unit)
	if j.Branch != "" {
		b = append(b, `,"branch":`...)
		b = str(b, j.Branch)
	}
	b = append(b, `,"runs":[`...)
	for i, r := range j.Runs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(r.Index), 10)
		b = append(b, `,"run":`...)
		b = strconv.AppendInt(b, r.Run, 10)
		b = append(b, `,"testid":`...)
		b = str(b, r.TestID)
		b = append(b, `,"commit":`...)
		b = str(b, r.Commit)
		b = append(b, `,"time":`...)
		b = str(b, r.Time)
		b = append(b, `,"value":`...)
		b = appendJSONFloat(b, r.Value)
		if r.Count != 0 {
			b = append(b, `,"count":`...)
			b = strconv.AppendInt(b, r.Count, 10)
		}
		if r.Interval != nil {
			b = append(b, `,"interval":{"low":`...)
			b = appendJSONFloat(b, r.Interval.Low)
			b = append(b, `,"high":`...)
			b = appendJSONFloat(b, r.Interval.High)
			b = append(b, '}')
		}
		if r.Excluded != "" {
			b = append(b, `,"excluded":`...)
			b = str(b, r.Excluded)
		}
		b = append(b, '}')
	}
	b = append(b, "]}\n"...)
	_, err := w.Write(b)
	return err
}

// appendJSONFloat formats a float as encoding/json does.
func appendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
