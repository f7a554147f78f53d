package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/cireport"
	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/history"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// changesFormats are the outputs of history changes.
var changesFormats = []string{"text", "json", "markdown", "junit"}

// historyChangesCommands adds `envelope history changes` and `ack`.
func (c *cli) historyChangesCommands(parent *kingpin.CmdClause, f historyFlags) {
	cmd := parent.Command("changes", "Find the change points, outlier runs and drift of every series of a test's main line (docs/changepoints.md). Exit 0: no new regression, 1: a regression change point not reported before, 2: bad input. Each change is reported as new once.")
	since := cmd.Flag("since", "Show only what happened from the run at this commit (or testid) on; the analysis reads every run.").String()
	envFile := cmd.Flag("envelope", "The current envelope: drift is measured from its latest run (matched by content hash or test id) against its tolerance (default: each series' last level, the default tolerance).").ExistingFile()
	format := cmd.Flag("format", cmdline.Choices("Output format.", changesFormats...)).Default("text").Enum(changesFormats...)
	cmd.Action(c.Action(func() error {
		env, err := readEnvelope(*envFile)
		if err != nil {
			return err
		}
		rep, err := c.analyseChanges(f, *since, env, true)
		if err != nil {
			return err
		}
		if err := writeChanges(c.Stdout, rep, *format); err != nil {
			return err
		}
		if rep.NewRegressions() > 0 {
			return cmdline.WithCode(cmdline.CodeRegression, nil)
		}
		return nil
	}))

	ack := parent.Command("ack", "Set a reported change point's status: acknowledged, expected, false_positive or fixed, with a note. A change is reported as new only until it has a status.")
	id := ack.Arg("ID", "The change point's id, as history changes shows it.").Required().String()
	status := ack.Flag("status", cmdline.Choices("The change's status.", history.AckStatuses()...)).Required().Enum(history.AckStatuses()...)
	note := ack.Flag("note", "Why, kept with the change.").String()
	ack.Action(c.Action(func() error {
		ctx := context.Background()
		s, err := f.open(ctx)
		if err != nil {
			return err
		}
		defer s.Close() //nolint:errcheck // the update said whether it landed
		st, err := history.ParseStatus(*status)
		if err != nil {
			return cmdline.WithCode(cmdline.CodeError, err)
		}
		ch, err := s.Ack(ctx, *id, string(st), *note)
		if err != nil {
			return cmdline.WithCode(cmdline.CodeError, err)
		}
		c.Printf("change %s (%s, %s at run %d, commit %s): %s%s\n", ch.ID, seriesName(ch.Endpoint, ch.Figure), ch.Direction,
			ch.RunIndex, dashed(ch.Commit), ch.Status, noteText(ch.Note))
		return nil
	}))
}

func noteText(n string) string {
	if n == "" {
		return ""
	}
	return ": " + n
}

// readEnvelope reads the envelope file named, nil for none.
func readEnvelope(path string) (*envelope.Envelope, error) {
	if path == "" {
		return nil, nil
	}
	env, err := envelope.ReadFile(path)
	if err != nil {
		return nil, cmdline.WithCode(cmdline.CodeError, err)
	}
	return env, nil
}

// analyseChanges analyses the main line and joins the stored lifecycle;
// with record, the new change points are stored as reported.
func (c *cli) analyseChanges(f historyFlags, since string, env *envelope.Envelope, record bool) (*history.ChangesReport, error) {
	ctx := context.Background()
	s, err := f.open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close() //nolint:errcheck // the inserts' commit said whether they landed
	test, err := f.resolveTest(ctx, s)
	if err != nil {
		return nil, err
	}
	tol := envelope.DefaultTolerance()
	if env != nil {
		tol = env.Tolerance
	}
	return analyseStore(ctx, s, runstore.Line{Test: test, MainBranch: f.mainBranchName()}, since, env, &tol, record)
}

// analyseStore is analyseChanges on an open store: the drift (none
// without tol) from the envelope's latest run when env is given; with
// record, the report's new change points are then stored as reported.
func analyseStore(ctx context.Context, s *runstore.Store, l runstore.Line, since string, env *envelope.Envelope, tol *envelope.Tolerance, record bool) (*history.ChangesReport, error) {
	an, err := history.Analyze(ctx, s, l, changepoint.Config{})
	if err != nil {
		return nil, cmdline.WithCode(cmdline.CodeError, err)
	}
	if len(an.Runs) == 0 {
		return nil, cmdline.WithCode(cmdline.CodeError, fmt.Errorf("history %s: test %s has no run on the main line (history list and history branches show what it holds)", s.Where, l.Test))
	}
	if env != nil {
		an.DriftFrom = an.EnvelopeRun(env)
	}
	from := 1
	if since != "" {
		if from = an.IndexOf(since); from == 0 {
			return nil, cmdline.WithCode(cmdline.CodeError, fmt.Errorf("--since %s: no run of test %s's main line at that commit or testid", since, l.Test))
		}
	}
	stored, err := s.StoredChanges(ctx, l.Test)
	if err != nil {
		return nil, cmdline.WithCode(cmdline.CodeError, err)
	}
	rep := an.Report(stored, from, tol)
	if fresh := rep.Unreported(); record && len(fresh) > 0 {
		first, err := s.MarkReported(ctx, fresh)
		if err != nil {
			return nil, cmdline.WithCode(cmdline.CodeError, err)
		}
		rep.Reported(first, time.Now())
	}
	return rep, nil
}

func (f historyFlags) mainBranchName() string {
	if f.mainBranch == nil {
		return ""
	}
	return *f.mainBranch
}

// seriesName names a series as history show takes it.
func seriesName(endpoint, figure string) string {
	if endpoint == "" {
		return figure
	}
	return endpoint + "." + figure
}

// writeChanges writes a changes report in one of changesFormats.
func writeChanges(w io.Writer, rep *history.ChangesReport, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "markdown":
		return cireport.WriteMarkdown(w, changesTable(rep))
	case "junit":
		return cireport.WriteJUnit(w, changesSuite(rep))
	}
	return writeChangesText(w, rep)
}

func pct(x float64) string { return fmt.Sprintf("%+.1f%%", 100*x) }

// changeStatus is a change's status for people: NEW when this call is
// the first to report it, else its stored status (a change nobody has
// acknowledged yet says when it was first reported).
func changeStatus(ch history.ReportedChange) string {
	switch {
	case ch.New:
		return "NEW"
	case ch.Status == history.StatusNew && ch.FirstReported != "":
		return "reported " + ch.FirstReported
	}
	return string(ch.Status) + noteText(ch.Note)
}

func writeChangesText(w io.Writer, rep *history.ChangesReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { _, _ = fmt.Fprintf(tw, format, a...) }
	p("test %s: %d runs on the main line, %d change points (%d new regressions), %d outlier runs\n",
		rep.Test, rep.Runs, len(rep.Changes), rep.NewRegressions(), len(rep.Outliers))
	if len(rep.Changes) > 0 {
		p("\nid\tseries\trun\tcommit\tdirection\tbefore\tafter\tchange\tp\tstatus\t\n")
		for _, ch := range rep.Changes {
			p("%s\t%s\t%d\t%s\t%s\t%.4g\t%.4g\t%s\t%.2g\t%s\t\n", ch.ID, seriesName(ch.Endpoint, ch.Figure), ch.Run.Index,
				dashed(ch.Run.Commit), ch.Direction, ch.Before, ch.After, pct(ch.Change.Change), ch.P, changeStatus(ch))
		}
	}
	if len(rep.Outliers) > 0 {
		p("\noutlier run\tseries\tcommit\tvalue\tsegment\tchange\tsigmas\t\n")
		for _, o := range rep.Outliers {
			p("%d\t%s\t%s\t%.4g\t%.4g\t%s\t%.1f\t\n", o.Run.Index, seriesName(o.Endpoint, o.Figure), dashed(o.Run.Commit),
				o.Value, o.SegmentMean, pct(o.Change), o.Sigmas)
		}
	}
	over := overTolerance(rep.Drift)
	if len(rep.Drift) > 0 {
		p("\ndrift: %d of %d series over tolerance\n", len(over), len(rep.Drift))
	}
	if len(over) > 0 {
		p("series\tsince run\truns\tdirection\tchange\tinterval\t\n")
		for _, d := range over {
			p("%s\t%d\t%d\t%s\t%s\t[%s, %s]\t\n", seriesName(d.Endpoint, d.Figure), d.Since.Index, d.Runs, d.Direction, pct(d.Change), pct(d.CI[0]), pct(d.CI[1]))
		}
	}
	return tw.Flush()
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

// changesTable is the Markdown report: one row per change point, then
// the outliers and the drift over tolerance as notes.
func changesTable(rep *history.ChangesReport) cireport.Table {
	t := cireport.Table{
		Title: "Change points: " + rep.Test,
		Lines: []string{fmt.Sprintf("%d runs on the main line: %d change points, %d of them new regressions; %d outlier runs.",
			rep.Runs, len(rep.Changes), rep.NewRegressions(), len(rep.Outliers))},
	}
	if len(rep.Changes) > 0 {
		t.Header = []string{"Series", "Run", "Commit", "Direction", "Before", "After", "Change", "Status", "Id"}
		for _, ch := range rep.Changes {
			t.Rows = append(t.Rows, []string{"`" + seriesName(ch.Endpoint, ch.Figure) + "`", fmt.Sprint(ch.Run.Index), dashed(ch.Run.Commit),
				string(ch.Direction), fmt.Sprintf("%.4g", ch.Before), fmt.Sprintf("%.4g", ch.After), pct(ch.Change.Change), changeStatus(ch), "`" + ch.ID + "`"})
		}
	}
	for _, o := range rep.Outliers {
		t.Notes = append(t.Notes, fmt.Sprintf("Outlier run %d (commit %s): `%s` %.4g against its segment's %.4g (%s, %.1fσ), not a change.",
			o.Run.Index, dashed(o.Run.Commit), seriesName(o.Endpoint, o.Figure), o.Value, o.SegmentMean, pct(o.Change), o.Sigmas))
	}
	for _, d := range overTolerance(rep.Drift) {
		t.Notes = append(t.Notes, fmt.Sprintf("Drift over tolerance: `%s` %s since run %d (interval %s to %s).",
			seriesName(d.Endpoint, d.Figure), pct(d.Change), d.Since.Index, pct(d.CI[0]), pct(d.CI[1])))
	}
	return t
}

// changesSuite is the JUnit report: one test case per series; a new
// regression change point fails its series' case.
func changesSuite(rep *history.ChangesReport) cireport.Suite {
	s := cireport.Suite{Name: "history changes: " + rep.Test, Class: "history.changes." + rep.Test}
	bySeries := map[string][]history.ReportedChange{}
	var order []string
	add := func(name string) {
		if _, ok := bySeries[name]; !ok {
			bySeries[name] = nil
			order = append(order, name)
		}
	}
	for _, d := range rep.Drift {
		add(seriesName(d.Endpoint, d.Figure))
	}
	for _, ch := range rep.Changes {
		name := seriesName(ch.Endpoint, ch.Figure)
		add(name)
		bySeries[name] = append(bySeries[name], ch)
	}
	for _, name := range order {
		cs := cireport.Case{Name: name, Output: "no change point"}
		var lines, fails []string
		for _, ch := range bySeries[name] {
			line := fmt.Sprintf("%s at run %d (commit %s): %.4g → %.4g (%s, p %.2g), %s, id %s", ch.Direction, ch.Run.Index,
				dashed(ch.Run.Commit), ch.Before, ch.After, pct(ch.Change.Change), ch.P, changeStatus(ch), ch.ID)
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

// previewChanges re-analyses the main line of each test runs were just
// recorded for (from the line's stored checkpoint: only the windows the
// new runs touch) and prints the change points no `history changes` has
// reported yet, and the outlier runs among the line's latest: found at
// once, reported as new by the gate (`history changes`) once.
func (c *cli) previewChanges(ctx context.Context, f historyFlags, s *runstore.Store, recs []runstore.Record) error {
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.Test] || r.Branch != "" && r.Branch != f.mainBranchName() {
			continue
		}
		seen[r.Test] = true
		rep, err := history.PreviewChanges(ctx, s, runstore.Line{Test: r.Test, MainBranch: f.mainBranchName()})
		if err != nil {
			// The runs are recorded; only the look at them failed.
			c.Printf("change points of %s: not analysed: %v\n", r.Test, err)
			continue
		}
		var fresh []history.ReportedChange
		for _, ch := range rep.Changes {
			if ch.New {
				fresh = append(fresh, ch)
			}
		}
		latest := rep.Runs - len(recs)
		var outs []changepoint.Outlier
		for _, o := range rep.Outliers {
			if o.Run.Index > latest {
				outs = append(outs, o)
			}
		}
		if len(fresh) == 0 && len(outs) == 0 {
			c.Printf("change points of %s: nothing new in %d runs\n", r.Test, rep.Runs)
			continue
		}
		c.Printf("change points of %s: %d not reported yet (`envelope history changes` reports them):\n", r.Test, len(fresh))
		if err := writeChangesText(c.Stdout, &history.ChangesReport{Test: r.Test, Runs: rep.Runs, Changes: fresh, Outliers: outs}); err != nil {
			return err
		}
	}
	return nil
}
