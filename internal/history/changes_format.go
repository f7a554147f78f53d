package history

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// WriteJSON writes the report as `history changes --format json` does:
// the JSON contract other tools read.
func (r *ChangesReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for people: a summary line, then tables of
// the change points, the outlier runs and the drift over tolerance.
func (r *ChangesReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { _, _ = fmt.Fprintf(tw, format, a...) }
	p("test %s: %d runs on the main line, %d change points (%d new regressions), %d outlier runs\n",
		r.Test, r.Runs, len(r.Changes), r.NewRegressions(), len(r.Outliers))
	if len(r.Changes) > 0 {
		p("\nid\tseries\trun\tcommit\tdirection\tbefore\tafter\tchange\tp\tstatus\t\n")
		for _, ch := range r.Changes {
			p("%s\t%s\t%d\t%s\t%s\t%.4g\t%.4g\t%s\t%.2g\t%s\t\n", ch.ID, ch.Key, ch.Run.Index,
				dash(ch.Run.Commit), ch.Direction, ch.Before, ch.After, pct(ch.Change.Change), ch.P, ch.statusText())
		}
	}
	if len(r.Gone) > 0 {
		p("\nreported, no longer found\tseries\trun\tcommit\tdirection\tbefore\tafter\twhy\t\n")
		for _, g := range r.Gone {
			p("%s\t%s\t%d\t%s\t%s\t%.4g\t%.4g\t%s\t\n", g.ID, g.Series, g.Run.Index, dash(g.Run.Commit), g.Dir, g.Before, g.After, g)
		}
	}
	if len(r.Outliers) > 0 {
		p("\noutlier run\tseries\tcommit\tvalue\tsegment\tchange\tsigmas\t\n")
		for _, o := range r.Outliers {
			p("%d\t%s\t%s\t%.4g\t%.4g\t%s\t%.1f\t\n", o.Run.Index, o.Key, dash(o.Run.Commit),
				o.Value, o.SegmentMean, pct(o.Change), o.Sigmas)
		}
	}
	if len(r.Suspected) > 0 {
		p("\nsuspected, not decided\tseries\tcommit\tdirection\tbefore\tafter\tchange\tp\tdecides at\truns before/after\tto decide\t\n")
		for _, s := range r.Suspected {
			p("%d\t%s\t%s\t%s\t%.4g\t%.4g\t%s\t%.2g\t%.2g\t%d/%d\t%s\t\n", s.Run.Index, s.Key, dash(s.Run.Commit), s.Direction,
				s.Before, s.After, pct(s.Change), s.P, s.Decide, s.RunsBefore, s.RunsAfter, MoreRuns(s))
		}
	}
	if len(r.NotAnalysed) > 0 {
		p("\nnot analysed (too few requests a run)\truns left out\tmost requests\trequests needed\t\n")
		for _, n := range r.NotAnalysed {
			p("%s\t%d of %d\t%d\t%d\t\n", n.Key, n.Runs, n.Runs+n.Analysed, n.MostRequests, n.RequestsNeeded)
		}
	}
	over := overTolerance(r.Drift)
	if len(r.Drift) > 0 {
		p("\ndrift: %d of %d series over tolerance\n", len(over), len(r.Drift))
	}
	if len(over) > 0 {
		p("series\tsince run\truns\tdirection\tchange\tinterval\t\n")
		for _, d := range over {
			p("%s\t%d\t%d\t%s\t%s\t[%s, %s]\t\n", d.Key, d.Since.Index, d.Runs, d.Direction, pct(d.Change), pct(d.CI[0]), pct(d.CI[1]))
		}
	}
	return tw.Flush()
}

func pct(x float64) string { return fmt.Sprintf("%+.1f%%", 100*x) }

// MoreRuns says what would decide a suspected step: more runs of the
// commit before it and of the latest one.
func MoreRuns(s changepoint.Suspect) string {
	if s.MoreRuns == 0 || len(s.MoreRunsOf) != 2 {
		return "more runs than the shift is worth"
	}
	if s.MoreRunsOf[0] == "" || s.MoreRunsOf[1] == "" {
		return fmt.Sprintf("%d more runs on each side", s.MoreRuns)
	}
	return fmt.Sprintf("%d more runs of each of %s and %s", s.MoreRuns, s.MoreRunsOf[0], s.MoreRunsOf[1])
}

func noteText(n string) string {
	if n == "" {
		return ""
	}
	return ": " + n
}

// statusText is a change's status for people: NEW when this call is the
// first to report it, else its stored status (a change nobody has
// acknowledged yet says when it was first reported).
func (ch ReportedChange) statusText() string {
	if ch.New {
		return "NEW"
	}
	return ch.StateText()
}

// StateText is a change's state for people: new, reported (with when),
// or its status and note.
func (ch ReportedChange) StateText() string {
	switch {
	case ch.State == StateReported && ch.FirstReported != "":
		return "reported " + ch.FirstReported
	case ch.State == "":
		return string(ch.Status) + noteText(ch.Note)
	}
	return string(ch.State) + noteText(ch.Note)
}

func overTolerance(ds []changepoint.Drift) []changepoint.Drift {
	var out []changepoint.Drift
	for _, d := range ds {
		if d.OverTolerance {
			out = append(out, d)
		}
	}
	return out
}

// storedSeries names a stored change's series as history show takes it.
func storedSeries(c runstore.StoredChange) string {
	return changepoint.Key{Figure: c.Figure, Endpoint: c.Endpoint}.String()
}

// WriteAck writes the line `history ack` answers with: the change, where
// it lies, and the status and note it was given.
func WriteAck(w io.Writer, ch runstore.StoredChange) error {
	_, err := fmt.Fprintf(w, "change %s (%s, %s at run %d, commit %s): %s%s\n", ch.ID, storedSeries(ch), ch.Direction,
		ch.RunIndex, dash(ch.Commit), ch.Status, noteText(ch.Note))
	return err
}

// WriteText writes what the re-baseline of an's line rests on, and with
// the current envelope (old; nil for none) each figure it judges by
// beside the new envelope's (cur).
func (rb *Rebaseline) WriteText(w io.Writer, an *Analysis, old, cur *envelope.Envelope) error {
	left := ""
	if len(rb.Outliers) > 0 {
		idx := make([]string, len(rb.Outliers))
		for i, x := range rb.Outliers {
			idx[i] = fmt.Sprint(x)
		}
		left = "; outlier runs left out: " + strings.Join(idx, ", ")
	}
	if _, err := fmt.Fprintf(w, "rebaseline of %s from change %s (%s, %s, %s) at run %d (commit %s): runs %d-%d, %d runs%s\n",
		an.Test, rb.Change.ID, storedSeries(rb.Change), rb.Change.Direction, rb.Change.Status,
		rb.From, dash(an.Runs[rb.From-1].Commit), rb.From, len(an.Runs), len(rb.Records), left); err != nil {
		return err
	}
	if old == nil {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "figure\tcurrent\tnew\tchange\t")
	for _, fc := range CompareEnvelopes(old, cur) {
		_, _ = fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%s\t\n", fc.Figure, fc.Old, fc.New, pct(fc.Change()))
	}
	return tw.Flush()
}
