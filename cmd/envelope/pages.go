package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/history"
	"github.com/envelope-dev/envelope/internal/page"
	"github.com/envelope-dev/envelope/internal/report"
	"github.com/envelope-dev/envelope/internal/stagereport"
)

// pageBeside is the path of a Markdown report's HTML page: the same name
// with .html for its extension, in the same folder.
func pageBeside(md string) string {
	return strings.TrimSuffix(md, filepath.Ext(md)) + ".html"
}

// writePageBeside reads the Markdown report at md and writes its
// self-contained page beside it (pageBeside), its charts read from md's
// folder; it returns the page's path. The page's title is the report's
// first heading.
func writePageBeside(md string, status page.Status, verdict string) (string, error) {
	b, err := os.ReadFile(md)
	if err != nil {
		return "", err
	}
	path := pageBeside(md)
	if err := page.WriteFile(path, page.Doc{Status: status, Verdict: verdict, Markdown: b, BaseDir: filepath.Dir(md)}); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return path, nil
}

// envelopeVerdict is the envelope report's banner: what the envelope is
// (runs, throughput, latency bands, errors), the headline in one line.
func envelopeVerdict(env *envelope.Envelope) string {
	return strings.Join(strings.Split(strings.TrimSpace(headline(env)), "\n"), "; ")
}

// stageVerdict is the stage report's banner: its first key finding, as
// plain text.
func stageVerdict(r *stagereport.StageReport) string {
	if len(r.Findings) == 0 {
		return fmt.Sprintf("%s over %s; no finding", plural(len(r.Endpoints), "endpoint"), plural(len(r.Windows), "stage"))
	}
	return strings.ReplaceAll(r.Findings[0], "**", "")
}

// historyVerdict is the run history report's banner: what it analysed
// and what it found, counted.
func historyVerdict(rep *history.ChangesReport, series int) string {
	return fmt.Sprintf("%d runs, %d series: %d change points, %d outlier runs", rep.Runs, series, len(rep.Changes), len(rep.Outliers))
}

// compareExitCodes is what compare's exit status means.
const compareExitCodes = "exit 0: no regression, 1: regression, 2: bad input"

// compareVerdict is a comparison's banner and its kind: a regression
// fails, a comparison in which no figure could be judged is said so, and
// anything else passes. Both follow the command's exit status.
func compareVerdict(res *compare.Result) (page.Status, string) {
	runs := plural(len(res.Candidates), "candidate run")
	if res.Regressed {
		var regressed []string
		for _, f := range res.Figures {
			if f.Verdict == compare.Regression {
				regressed = append(regressed, f.Label())
			}
		}
		return page.Fail, fmt.Sprintf("Regression in %s: %s against envelope %s (exit 1)", strings.Join(regressed, ", "), runs, res.Envelope)
	}
	for _, f := range res.Figures {
		if f.Verdict != compare.NoData && f.Verdict != compare.NotJudgeable {
			return page.Pass, fmt.Sprintf("No regression: %s against envelope %s (exit 0)", runs, res.Envelope)
		}
	}
	return page.Info, fmt.Sprintf("Not judgeable: no figure of %s could be judged against envelope %s (exit 0)", runs, res.Envelope)
}

// maxRunViews bounds how many candidate runs a comparison's page shows
// over time, so a comparison of many runs stays a page a reader scrolls.
const maxRunViews = 5

// comparison is a comparison's result with what its page needs beside
// it: the envelope and the candidate runs (whose timelines the page
// draws against the envelope's bands; none for a comparison that has
// no loaded runs) and the window the candidates were measured over.
type comparison struct {
	res    *compare.Result
	env    *envelope.Envelope
	runs   []figures.Run
	window string
}

// comparePage is a comparison's page: the window the candidates were
// measured over (when known), everything the Markdown format holds (the
// result, the sentences, the table of every figure and its verdict, the
// notes), each candidate run over time against the envelope's bands
// (report.RunOverTime, at most maxRunViews) and what the exit status
// means.
func comparePage(c comparison) (page.Doc, error) {
	res := c.res
	var md bytes.Buffer
	fmt.Fprintf(&md, "# Envelope %s vs %s\n\n", res.Envelope, plural(len(res.Candidates), "candidate run"))
	if c.window != "" {
		md.WriteString(c.window + "\n\n")
	}
	if err := res.WriteMarkdown(&md); err != nil {
		return page.Doc{}, err
	}
	for i, run := range c.runs {
		if i == maxRunViews {
			fmt.Fprintf(&md, "\nThe other %s are not shown over time: the page shows the first %d; compare them alone to see each.\n", plural(len(c.runs)-maxRunViews, "candidate run"), maxRunViews)
			break
		}
		sec, err := report.RunOverTime(run, c.env, res)
		if err != nil {
			return page.Doc{}, err
		}
		md.WriteString("\n" + sec)
	}
	code := 0
	if res.Regressed {
		code = 1
	}
	fmt.Fprintf(&md, "\n### Exit status\n\n`envelope compare` exits %d for this result (%s).\n", code, compareExitCodes)
	status, verdict := compareVerdict(res)
	return page.Doc{Status: status, Verdict: verdict, Markdown: md.Bytes()}, nil
}
