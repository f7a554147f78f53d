package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
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

	ack := parent.Command("ack", "Set reported change points' status: acknowledged, expected, false_positive or fixed, with a note. Give their ids, or select them: every change of a series (--figure) or of a run range (--runs) not given a status yet. A change is reported as new only until it has a status.")
	ids := ack.Arg("ID", "Change point ids, as history changes shows them.").Strings()
	figure := ack.Flag("figure", "Select the changes of this series, e.g. p95 or auth_login.p95 (as history show names it).").String()
	runs := ack.Flag("runs", "Select the changes at these runs of the main line: FROM..TO, each a run index, commit or testid (17..21, c11..c24, 23..).").String()
	status := ack.Flag("status", cmdline.Choices("The changes' status.", history.AckStatuses()...)).Required().Enum(history.AckStatuses()...)
	note := ack.Flag("note", "Why, kept with each change.").String()
	ack.Action(c.Action(func() error {
		st, err := history.ParseStatus(*status)
		if err != nil {
			return err
		}
		ctx, stop := c.SignalContext()
		defer stop()
		s, err := f.open(ctx)
		if err != nil {
			return err
		}
		defer s.Close() //nolint:errcheck // the update said whether it landed
		picked, err := c.selectChanges(ctx, f, s, *figure, *runs)
		if err != nil {
			return err
		}
		all := append(append([]string{}, *ids...), picked...)
		if len(all) == 0 {
			if len(*ids) == 0 && *figure == "" && *runs == "" {
				return fmt.Errorf("ack: give change ids, --figure or --runs")
			}
			return fmt.Errorf("ack: no change point without a status at --figure %q --runs %q (history changes lists them)", *figure, *runs)
		}
		chs, err := s.Ack(ctx, dedupe(all), string(st), *note)
		if err != nil {
			return err
		}
		for _, ch := range chs {
			if err := history.WriteAck(c.Stdout, ch); err != nil {
				return err
			}
		}
		return nil
	}))
}

// selectChanges is the ids of the test's reported changes without a
// status that --figure and --runs select (both: those in both); none
// when neither is given.
func (c *cli) selectChanges(ctx context.Context, f historyFlags, s *runstore.Store, figure, runs string) ([]string, error) {
	if figure == "" && runs == "" {
		return nil, nil
	}
	var sel history.Selection
	if figure != "" {
		k, err := figures.ParseKey(figure)
		if err != nil {
			return nil, fmt.Errorf("--figure: %w", err)
		}
		sel.Series = &k
	}
	test, err := f.resolveTest(ctx, s)
	if err != nil {
		return nil, err
	}
	line, err := s.Runs(ctx, runstore.Line{Test: test, MainBranch: f.mainBranchName()})
	if err != nil {
		return nil, err
	}
	if runs != "" {
		if sel.From, sel.To, err = history.ParseRuns(runs, line); err != nil {
			return nil, fmt.Errorf("--runs: %w", err)
		}
	}
	stored, err := s.StoredChanges(ctx, test)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ch := range history.Select(stored, line, sel) {
		out = append(out, ch.ID)
	}
	return out, nil
}

// dedupe keeps the first of each id.
func dedupe(ids []string) []string {
	seen := map[string]bool{}
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// readEnvelope reads the envelope file named, nil for none.
func readEnvelope(path string) (*envelope.Envelope, error) {
	if path == "" {
		return nil, nil
	}
	return envelope.ReadFile(path)
}

// analyseChanges analyses the main line and joins the stored lifecycle;
// with record, the new change points are stored as reported.
func (c *cli) analyseChanges(f historyFlags, since string, env *envelope.Envelope, record bool) (*history.ChangesReport, error) {
	ctx, stop := c.SignalContext()
	defer stop()
	s, err := f.open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close() //nolint:errcheck // the inserts' commit said whether they landed
	test, err := f.resolveTest(ctx, s)
	if err != nil {
		return nil, err
	}
	tol := figures.DefaultTolerance()
	if env != nil {
		tol = env.Tolerance
	}
	return analyseStore(ctx, s, runstore.Line{Test: test, MainBranch: f.mainBranchName()}, since, env, &tol, record)
}

// analyseStore is analyseChanges on an open store: the drift (none
// without tol) from the envelope's latest run when env is given; with
// record, the report's new change points are then stored as reported.
func analyseStore(ctx context.Context, s *runstore.Store, l runstore.Line, since string, env *envelope.Envelope, tol *figures.Tolerance, record bool) (*history.ChangesReport, error) {
	an, err := history.Analyze(ctx, s, l, changepoint.Config{})
	if err != nil {
		return nil, err
	}
	if len(an.Runs) == 0 {
		return nil, fmt.Errorf("history %s: test %s has no run on the main line (history list and history branches show what it holds)", s.Where, l.Test)
	}
	if env != nil {
		an.DriftFrom = an.EnvelopeRun(env)
	}
	from := 1
	if since != "" {
		if from = an.IndexOf(since); from == 0 {
			return nil, fmt.Errorf("--since %s: no run of test %s's main line at that commit or testid", since, l.Test)
		}
	}
	stored, err := s.StoredChanges(ctx, l.Test)
	if err != nil {
		return nil, err
	}
	rep := an.Report(stored, from, tol)
	if fresh := rep.Unreported(); record && len(fresh) > 0 {
		first, err := s.MarkReported(ctx, fresh)
		if err != nil {
			return nil, err
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

// writeChanges writes a changes report in one of changesFormats.
func writeChanges(w io.Writer, rep *history.ChangesReport, format string) error {
	switch format {
	case "json":
		return rep.WriteJSON(w)
	case "markdown":
		return rep.WriteMarkdown(w)
	case "junit":
		return rep.WriteJUnit(w)
	}
	return rep.WriteText(w)
}

// previewChanges re-analyses the main line of each test runs were just
// recorded for (fresh: the ids of the runs stored now; from the line's
// stored checkpoint: only the windows the new runs touch) and prints what
// they changed: the change points found now and not before, moved, or no
// longer found (with why), and the outlier runs among them. The gate
// (`history changes`) reports each change as new once.
func (c *cli) previewChanges(ctx context.Context, f historyFlags, s *runstore.Store, recs []runstore.Record, fresh []int64) error {
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.Test] || r.Branch != "" && r.Branch != f.mainBranchName() {
			continue
		}
		seen[r.Test] = true
		rc, err := history.PreviewChanges(ctx, s, runstore.Line{Test: r.Test, MainBranch: f.mainBranchName()}, fresh)
		if err != nil {
			// The runs are recorded; only the look at them failed.
			c.Printf("change points of %s: not analysed: %v\n", r.Test, err)
			continue
		}
		if err := rc.WriteText(c.Stdout); err != nil {
			return err
		}
	}
	return nil
}
