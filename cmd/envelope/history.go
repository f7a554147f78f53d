package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/history"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/otava"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// historyFlags are the flags every history command shares.
type historyFlags struct {
	dsn        *string
	test       *string
	mainBranch *string
}

// historyCommand adds `envelope history` and its commands.
func (c *cli) historyCommand(app *kingpin.Application) {
	cmd := app.Command("history", "Keep every run by commit in an embedded SQLite file or a team's PostgreSQL, and read each figure's series across commits.")
	f := historyFlags{
		dsn: cmd.Flag("history", "Where the history is: an SQLite file path or a postgres:// URL.").
			Envar(runstore.EnvDSN).Default(runstore.DefaultDSN).String(),
		test:       cmd.Flag("test", "Test the runs belong to (default: the runs' envelope tag when recording; the history's only test when reading).").String(),
		mainBranch: cmd.Flag("main-branch", "Branch of the main line; runs of other branches never enter its series.").Default(runstore.DefaultMainBranch).String(),
	}
	c.historyRecordCommand(cmd, f)
	c.historyImportCommand(cmd, f)
	c.historyListCommand(cmd, f)
	c.historyShowCommand(cmd, f)
	c.historyExcludeCommands(cmd, f)
	c.historyBranchesCommand(cmd, f)
	c.historyCompareCommand(cmd, f)
	c.historyChangesCommands(cmd, f)
	c.historyRebaselineCommand(cmd, f)
	c.historyReportCommand(cmd, f)
}

// open opens the history the flags name, creating it when missing.
func (f historyFlags) open(ctx context.Context) (*runstore.Store, error) {
	return runstore.Open(ctx, *f.dsn)
}

// openExisting opens the history for a command that only reads or
// updates recorded runs: a missing SQLite file is an error.
func (f historyFlags) openExisting(ctx context.Context) (*runstore.Store, error) {
	return runstore.OpenExisting(ctx, *f.dsn)
}

// openTest opens the history (one that must exist already, for commands
// that only read) and names the test the command is about.
func (f historyFlags) openTest(ctx context.Context, existing bool) (*runstore.Store, string, error) {
	open := f.open
	if existing {
		open = f.openExisting
	}
	s, err := open(ctx)
	if err != nil {
		return nil, "", err
	}
	test, err := f.resolveTest(ctx, s)
	if err != nil {
		_ = s.Close() // only read; the test's error is the one to report
		return nil, "", err
	}
	return s, test, nil
}

// resolveTest is --test, else the history's only test.
func (f historyFlags) resolveTest(ctx context.Context, s *runstore.Store) (string, error) {
	if *f.test != "" {
		return *f.test, nil
	}
	tests, err := s.Tests(ctx)
	if err != nil {
		return "", err
	}
	switch len(tests) {
	case 0:
		return "", fmt.Errorf("history %s holds no runs: record some with `envelope history record FILE`", s.Where)
	case 1:
		return tests[0], nil
	}
	return "", fmt.Errorf("history %s holds the tests %s: choose one with --test", s.Where, strings.Join(tests, ", "))
}

// recordFlags are the run metadata record and import take.
type recordFlags struct {
	branch, version, note, groupBy *string
	skip                           *time.Duration
	mode                           modeFlags
}

func addRecordFlags(cmd *kingpin.CmdClause) recordFlags {
	return recordFlags{
		branch:  cmd.Flag("branch", "Branch of the runs (default: their branch tag).").String(),
		version: cmd.Flag("release", "Version of the software the runs tested (default: their version tag).").String(),
		note:    cmd.Flag("note", "A note kept with the runs.").String(),
		groupBy: cmd.Flag("group-by", "Tag whose values get endpoint figures, as baseline's --group-by.").String(),
		skip:    cmd.Flag("skip-warmup", "Drop the first D of each run's points as warm-up, as baseline's --skip-warmup.").Duration(),
		mode:    addModeFlags(cmd),
	}
}

// historyRecordCommand adds `envelope history record`.
func (c *cli) historyRecordCommand(parent *kingpin.CmdClause, f historyFlags) {
	cmd := parent.Command("record", "Record k6 runs (any format k6 writes) with their commit, branch and version: from the runs' tags (k6 --tag commit=… --tag branch=…), flags override. All or nothing; a run recorded before is left as it is. Then prints what the new runs changed in the main line's change points: new, moved, no longer found (with why).")
	commit := cmd.Flag("commit", "Commit the runs were made at (default: their commit tag).").String()
	at := cmd.Flag("time", "Commit time (RFC 3339, or 2006-01-02 15:04:05 [-0700]); runs are ordered by it, else by their run time.").String()
	rf := addRecordFlags(cmd)
	files := cmd.Arg("FILE", "k6 result files.").Required().ExistingFiles()
	cmd.Action(c.Action(func() error {
		meta := runstore.Meta{Test: *f.test, Commit: *commit, Branch: *rf.branch, Version: *rf.version, Note: *rf.note}
		if *at != "" {
			t, err := otava.ParseTime(*at)
			if err != nil {
				return fmt.Errorf("--time: %w", err)
			}
			meta.CommitTime = t
		}
		return c.recordFiles(f, *files, meta, rf)
	}))
}

// recordFiles reads each file as baseline reads runs, then records them
// all in one transaction.
func (c *cli) recordFiles(f historyFlags, files []string, meta runstore.Meta, rf recordFlags) error {
	recs := make([]runstore.Record, 0, len(files))
	for _, path := range files {
		in, err := figures.ReadFiles([]string{path}, rf.mode.apply(figures.LoadOptions(*rf.skip, *rf.groupBy)))
		if err != nil {
			return fmt.Errorf("nothing recorded: %w", cmdline.MissingFileMessage(err))
		}
		rec, err := runstore.FromRun(in[0], meta)
		if err != nil {
			return fmt.Errorf("nothing recorded: %w", err)
		}
		recs = append(recs, rec)
	}
	// The signal is claimed once the runs are read: a Ctrl-C while they
	// are read ends the process at once, before anything is written.
	ctx, stop := c.SignalContext()
	defer stop()
	return c.addRecords(ctx, f, recs)
}

// addRecords stores records and says what became of each.
func (c *cli) addRecords(ctx context.Context, f historyFlags, recs []runstore.Record) error {
	s, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close() //nolint:errcheck // the commit said whether it landed
	added, err := s.Add(ctx, recs)
	if err != nil {
		return fmt.Errorf("nothing recorded: %w", err)
	}
	n := 0
	fresh := []int64{}
	for i, a := range added {
		r := recs[i]
		what := fmt.Sprintf("%d figures recorded", len(r.Figures))
		if a.Existing {
			what = "already recorded, left as it was"
		} else {
			n++
			fresh = append(fresh, a.ID)
		}
		c.Printf("run %d: %s (test %s, testid %s, commit %s): %s\n", a.ID, r.SourceFile, r.Test, dashed(r.TestID), dashed(r.Commit), what)
	}
	c.Printf("history %s: %d of %d runs new\n", s.Where, n, len(recs))
	return c.previewChanges(ctx, f, s, recs, fresh)
}

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// historyImportCommand adds `envelope history import`.
func (c *cli) historyImportCommand(parent *kingpin.CmdClause, f historyFlags) {
	cmd := parent.Command("import", "Record every k6 result file of a folder (each run's commit from its tags), or an Otava-style CSV (--from-csv: time, commit, one column per figure).")
	pattern := cmd.Flag("pattern", "Only the folder's files whose names match, e.g. '*.summary.json'. By default the files of one run (the same name up to its first dot: run-01.ndjson.gz, run-01.summary.json) count once, its point file kept (NDJSON, then CSV), which carries k6's tags and every sample.").Default("*").String()
	fromCSV := cmd.Flag("from-csv", "An Otava-style CSV to import instead of a folder: a header of time, commit (optional branch, version, testid, note) and figures (p95, auth_login.p95, …).").ExistingFile()
	rf := addRecordFlags(cmd)
	dir := cmd.Arg("DIR", "Folder of k6 result files.").ExistingDir()
	cmd.Action(c.Action(func() error {
		meta := runstore.Meta{Test: *f.test, Branch: *rf.branch, Version: *rf.version, Note: *rf.note}
		switch {
		case *fromCSV != "" && *dir != "":
			return errors.New("import: give a folder or --from-csv, not both")
		case *fromCSV != "":
			return c.importCSV(f, *fromCSV, meta)
		case *dir == "":
			return errors.New("import: give a folder of k6 result files, or --from-csv FILE")
		}
		files, err := k6.ResultFiles(*dir, *pattern)
		if err != nil {
			return err
		}
		return c.recordFiles(f, files, meta, rf)
	}))
}

// importCSV records an Otava-style CSV's runs; --branch, --version and
// --note fill the cells the file leaves empty.
func (c *cli) importCSV(f historyFlags, path string, meta runstore.Meta) error {
	fh, err := os.Open(path)
	if err != nil {
		return cmdline.MissingFileMessage(err)
	}
	defer fh.Close() //nolint:errcheck // only read
	recs, err := otava.ReadCSV(figures.SourceName(path), fh, meta.Test)
	if err != nil {
		return fmt.Errorf("nothing recorded: %w", err)
	}
	for i := range recs {
		r := &recs[i]
		r.Branch = cmp.Or(r.Branch, meta.Branch)
		r.Version = cmp.Or(r.Version, meta.Version)
		r.Note = cmp.Or(r.Note, meta.Note)
	}
	ctx, stop := c.SignalContext()
	defer stop()
	return c.addRecords(ctx, f, recs)
}

// historyListCommand adds `envelope history list`.
func (c *cli) historyListCommand(parent *kingpin.CmdClause, f historyFlags) {
	cmd := parent.Command("list", "List a test's runs in commit-time order, excluded ones marked.")
	branch := cmd.Flag("branch", "List this branch's runs instead of the main line's.").String()
	format := cmd.Flag("format", cmdline.Choices("Output format (markdown for a pull-request comment or $GITHUB_STEP_SUMMARY).", "text", "json", "csv", "markdown")).Default("text").Enum("text", "json", "csv", "markdown")
	cmd.Action(c.Action(func() error {
		ctx, stop := c.SignalContext()
		defer stop()
		s, test, err := f.openTest(ctx, true)
		if err != nil {
			return err
		}
		defer s.Close() //nolint:errcheck // only read
		runs, err := s.Runs(ctx, runstore.Line{Test: test, Branch: *branch, MainBranch: *f.mainBranch, WithExcluded: true})
		if err != nil {
			return err
		}
		return history.WriteRuns(c.Stdout, runs, *format)
	}))
}

// historyShowCommand adds `envelope history show`.
func (c *cli) historyShowCommand(parent *kingpin.CmdClause, f historyFlags) {
	cmd := parent.Command("show", "Show one figure of a test's runs in commit-time order: "+figureNames()+"; an endpoint's as ENDPOINT.FIGURE (auth_login.p95).")
	figure := cmd.Flag("figure", "The figure, e.g. p95 or auth_login.p95.").Required().String()
	branch := cmd.Flag("branch", "Show this branch's runs instead of the main line's.").String()
	format := cmd.Flag("format", cmdline.Choices("Output format (markdown for a pull-request comment or $GITHUB_STEP_SUMMARY).", "text", "json", "csv", "markdown")).Default("text").Enum("text", "json", "csv", "markdown")
	cmd.Action(c.Action(func() error {
		k, err := figures.ParseKey(*figure)
		if err != nil {
			return fmt.Errorf("--figure: %w", err)
		}
		ctx, stop := c.SignalContext()
		defer stop()
		s, test, err := f.openTest(ctx, true)
		if err != nil {
			return err
		}
		defer s.Close() //nolint:errcheck // only read
		pts, err := s.Series(ctx, runstore.Line{Test: test, Branch: *branch, MainBranch: *f.mainBranch, WithExcluded: true}, k)
		if err != nil {
			return err
		}
		if len(pts) == 0 {
			return fmt.Errorf("history %s: test %s has no run with figure %s", s.Where, test, *figure)
		}
		return history.SeriesView{Test: test, Endpoint: k.Endpoint, Figure: k.Figure, Branch: *branch, Points: pts}.Write(c.Stdout, *format)
	}))
}

// historyExcludeCommands adds `envelope history exclude` and `include`.
func (c *cli) historyExcludeCommands(parent *kingpin.CmdClause, f historyFlags) {
	ex := parent.Command("exclude", "Leave a run out of analysis (it stays recorded and shown); undo with include.")
	exRun := ex.Arg("RUN", "The run's id or testid, as history list shows them.").Required().String()
	reason := ex.Flag("reason", "Why, kept with the run.").Required().String()
	ex.Action(c.Action(func() error {
		return c.setExcluded(f, func(ctx context.Context, s *runstore.Store) (runstore.Run, error) {
			return s.Exclude(ctx, *exRun, *reason)
		})
	}))
	in := parent.Command("include", "Put an excluded run back into analysis.")
	inRun := in.Arg("RUN", "The run's id or testid.").Required().String()
	in.Action(c.Action(func() error {
		return c.setExcluded(f, func(ctx context.Context, s *runstore.Store) (runstore.Run, error) {
			return s.Include(ctx, *inRun)
		})
	}))
}

func (c *cli) setExcluded(f historyFlags, set func(context.Context, *runstore.Store) (runstore.Run, error)) error {
	ctx, stop := c.SignalContext()
	defer stop()
	s, err := f.openExisting(ctx)
	if err != nil {
		return err
	}
	defer s.Close() //nolint:errcheck // the update said whether it landed
	r, err := set(ctx, s)
	if err != nil {
		return err
	}
	if r.Excluded {
		c.Printf("run %d (testid %s, commit %s) excluded from analysis: %s\n", r.ID, dashed(r.TestID), dashed(r.Commit), r.Reason)
	} else {
		c.Printf("run %d (testid %s, commit %s) included in analysis\n", r.ID, dashed(r.TestID), dashed(r.Commit))
	}
	return nil
}

// historyBranchesCommand adds `envelope history branches`.
func (c *cli) historyBranchesCommand(parent *kingpin.CmdClause, f historyFlags) {
	cmd := parent.Command("branches", "List the branches a test's runs were recorded on; the main line takes the main branch's runs and those of no known branch.")
	cmd.Action(c.Action(func() error {
		ctx, stop := c.SignalContext()
		defer stop()
		s, test, err := f.openTest(ctx, true)
		if err != nil {
			return err
		}
		defer s.Close() //nolint:errcheck // only read
		bs, err := s.Branches(ctx, test)
		if err != nil {
			return err
		}
		return history.WriteBranches(c.Stdout, bs, *f.mainBranch)
	}))
}

// historyCompareCommand adds `envelope history compare`.
func (c *cli) historyCompareCommand(parent *kingpin.CmdClause, f historyFlags) {
	cmd := parent.Command("compare", "Judge a branch's latest runs against the main line's latest runs with compare's method and verdicts (exit 0: no regression, 1: regression, 2: bad input).")
	branch := cmd.Flag("branch", "The branch whose runs are judged.").Required().String()
	last := cmd.Flag("last", "How many of the main line's latest runs form the baseline.").Default("10").Int()
	cands := cmd.Flag("candidates", "How many of the branch's latest runs are judged.").Default("3").Int()
	tolerance := cmd.Flag("tolerance", "Tolerance as compare takes it: 10%, or latency=10%,throughput=5%,errors=0.1%.").String()
	method := cmd.Flag("method", cmdline.Choices("Interval method over runs.", "welch", "bootstrap")).Default("welch").Enum("welch", "bootstrap")
	format := cmd.Flag("format", cmdline.Choices("Output format, as compare's.", compareFormats...)).Default("text").Enum(compareFormats...)
	cmd.Action(c.Action(func() error {
		if *last < 2 || *cands < 1 {
			return fmt.Errorf("--last %d, --candidates %d: want at least 2 baseline runs and 1 candidate", *last, *cands)
		}
		opts := compare.Options{Method: *method}
		var err error
		if opts.Tolerance, err = parseTolerance(*tolerance); err != nil {
			return err
		}
		res, err := c.compareBranch(f, *branch, *last, *cands, opts)
		if err != nil {
			return err
		}
		if err := writeResult(c.Stdout, res, *format); err != nil {
			return err
		}
		if res.Regressed {
			return cmdline.WithCode(cmdline.CodeRegression, nil)
		}
		return nil
	}))
}

// compareBranch reads the two stretches and compares them.
func (c *cli) compareBranch(f historyFlags, branch string, last, cands int, opts compare.Options) (*compare.Result, error) {
	ctx, stop := c.SignalContext()
	defer stop()
	s, err := f.openExisting(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close() //nolint:errcheck // only read
	test, err := f.resolveTest(ctx, s)
	if err != nil {
		return nil, err
	}
	if branch == *f.mainBranch {
		return nil, fmt.Errorf("--branch %s is the main line's branch: give another branch", branch)
	}
	base, err := s.Latest(ctx, runstore.Line{Test: test, MainBranch: *f.mainBranch}, last)
	if err != nil {
		return nil, err
	}
	cand, err := s.Latest(ctx, runstore.Line{Test: test, Branch: branch, MainBranch: *f.mainBranch}, cands)
	if err != nil {
		return nil, err
	}
	if len(cand) == 0 {
		return nil, fmt.Errorf("history %s: test %s has no run on branch %s", s.Where, test, branch)
	}
	if len(base) < 2 {
		return nil, fmt.Errorf("history %s: test %s has %d run(s) on the main line (%s): a comparison needs at least 2", s.Where, test, len(base), *f.mainBranch)
	}
	// The main line's latest runs, whatever workloads they ran: the
	// candidates are judged against the first's.
	env, err := runstore.Envelope(base, nil, fmt.Sprintf("%s main line, latest %d runs", test, len(base)), true)
	if err != nil {
		return nil, err
	}
	runs := make([]figures.Run, len(cand))
	for i, r := range cand {
		runs[i] = r.RunFigures()
	}
	return compare.Compare(env, runs, opts)
}

// figureNames lists every figure's name, as the history commands take
// them.
func figureNames() string {
	names := figures.Names()
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ", ")
}
