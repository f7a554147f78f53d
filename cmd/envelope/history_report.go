package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/history"
	"github.com/envelope-dev/envelope/internal/page"
	"github.com/envelope-dev/envelope/internal/report"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// historyReportCommand adds `envelope history report`.
func (c *cli) historyReportCommand(parent *kingpin.CmdClause, f historyFlags) {
	cmd := parent.Command("report", "Write a Markdown report of a test's main line: change points, outlier runs, drift, and a light and a dark chart per series (values by commit, segment levels, change points, outlier runs, the envelope's band). Reports nothing as new: history changes is the gate.")
	envFile := cmd.Flag("envelope", "Envelope whose bands the charts show and whose tolerance the drift is judged against.").ExistingFile()
	out := cmd.Flag("out", "Markdown file to write; the charts go to charts/ beside it.").Default("history-report.md").String()
	cmd.Action(c.Action(func() error {
		var env *envelope.Envelope
		if *envFile != "" {
			var err error
			if env, err = envelope.ReadFile(*envFile); err != nil {
				return err
			}
		}
		tol := figures.DefaultTolerance()
		if env != nil {
			tol = env.Tolerance
		}
		ctx, stop := c.SignalContext()
		defer stop()
		s, test, err := f.openTest(ctx, false)
		if err != nil {
			return err
		}
		defer s.Close() //nolint:errcheck // only read
		l := runstore.Line{Test: test, MainBranch: f.mainBranchName()}
		an, err := history.Analyze(ctx, s, l, changepoint.Config{})
		if err != nil {
			return err
		}
		if len(an.Runs) == 0 {
			return fmt.Errorf("history %s: test %s has no run on the main line", s.Where, test)
		}
		if env != nil {
			an.DriftFrom = an.EnvelopeRun(env)
		}
		stored, err := s.StoredChanges(ctx, test)
		if err != nil {
			return err
		}
		rep := an.Report(stored, 1, &tol)
		hr, err := historyReportData(ctx, s, l, an, rep, env)
		if err != nil {
			return err
		}
		if err := report.WriteHistoryReport(hr, *out); err != nil {
			return err
		}
		html, err := writePageBeside(*out, page.Info, historyVerdict(rep, len(hr.Series)))
		if err != nil {
			return err
		}
		c.Printf("history report page: %s\n", html)
		c.Printf("history report of %s: %d runs, %d series, %d change points, %d outlier runs: %s\n",
			test, rep.Runs, len(hr.Series), len(rep.Changes), len(rep.Outliers), *out)
		return nil
	}))
}

// historyReportData reads every series' runs, placed by their index in
// the line, with the envelope's band of each figure from the first of
// the envelope's runs in the line.
func historyReportData(ctx context.Context, s *runstore.Store, l runstore.Line, an *history.Analysis, rep *history.ChangesReport, env *envelope.Envelope) (report.HistoryReport, error) {
	hr := report.HistoryReport{Changes: rep}
	from := 0
	if env != nil {
		hr.Envelope = env.Name
		from, _ = an.EnvelopeRuns(env)
	}
	index := map[int64]int{}
	for i, r := range an.Runs {
		index[r.ID] = i + 1
		hr.Labels = append(hr.Labels, cmp.Or(r.Commit, r.TestID, fmt.Sprintf("#%d", i+1)))
	}
	for _, k := range an.Analyzer.Keys() {
		pts, err := s.Series(ctx, l, k.Figures())
		if err != nil {
			return hr, err
		}
		hs := report.HistorySeries{Key: k, Band: envelopeBand(env, k.Figures()), BandFrom: from}
		for _, p := range pts {
			hs.Runs = append(hs.Runs, changepoint.Run{Index: index[p.Run.ID], Commit: p.Run.Commit, TestID: p.Run.TestID, Value: p.Value})
		}
		hr.Series = append(hr.Series, hs)
	}
	return hr, nil
}

// envelopeBand is the envelope's range of a figure: the min and max of
// its baseline runs' values; nil when it has none.
func envelopeBand(env *envelope.Envelope, k figures.Key) *chart.Band {
	if env == nil {
		return nil
	}
	lo, hi, ok := env.Range(k)
	if !ok {
		return nil
	}
	return &chart.Band{Name: fmt.Sprintf("envelope %s–%s", envFigText(lo), envFigText(hi)), Low: lo, High: hi}
}

func envFigText(v float64) string { return fmt.Sprintf("%.4g", v) }
