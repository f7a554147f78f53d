// Package cireport writes the reports a CI reads from a judgement of
// figures: JUnit XML, one test case per figure, which CI systems show
// as tests (a regression is a failed test), and Markdown for a
// pull-request comment or a job summary ($GITHUB_STEP_SUMMARY).
package cireport

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// Case is one judged figure.
type Case struct {
	Name string // the figure, e.g. "aggregate p95"
	// Failure, when set, fails the case: what regressed, by how much,
	// its interval and the tolerance.
	Failure string
	// Skipped, when set, marks a figure that could not be judged, and why.
	Skipped string
	// Output is the figure's verdict in a sentence, for every case.
	Output string
}

// Suite is one judgement: a name (what was judged against what) and
// its cases.
type Suite struct {
	Name  string
	Class string // the JUnit classname of every case
	Cases []Case
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

// WriteJUnit writes the suite as JUnit XML.
func WriteJUnit(w io.Writer, s Suite) error {
	js := junitSuite{Name: s.Name, Tests: len(s.Cases)}
	for _, c := range s.Cases {
		jc := junitCase{Name: c.Name, ClassName: s.Class, Time: "0", SystemOut: c.Output}
		switch {
		case c.Failure != "":
			jc.Failure = &junitFailure{Message: c.Failure, Type: "regression", Text: c.Output}
			js.Failures++
		case c.Skipped != "":
			jc.Skipped = &junitSkipped{Message: c.Skipped}
			js.Skipped++
		}
		js.Cases = append(js.Cases, jc)
	}
	out := junitSuites{Name: s.Name, Tests: js.Tests, Failures: js.Failures, Suites: []junitSuite{js}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// Table is a Markdown report: a heading, lines of prose, a table and
// notes.
type Table struct {
	Title  string
	Lines  []string
	Header []string
	Rows   [][]string
	Notes  []string
}

// cell escapes what would break a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// WriteMarkdown writes the table as GitHub-flavoured Markdown.
func WriteMarkdown(w io.Writer, t Table) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", t.Title)
	for _, l := range t.Lines {
		b.WriteString(l + "\n")
	}
	if len(t.Lines) > 0 {
		b.WriteString("\n")
	}
	if len(t.Header) > 0 {
		row := func(cells []string) {
			esc := make([]string, len(cells))
			for i, c := range cells {
				esc[i] = cell(c)
			}
			b.WriteString("| " + strings.Join(esc, " | ") + " |\n")
		}
		row(t.Header)
		seps := make([]string, len(t.Header))
		for i := range seps {
			seps[i] = "---"
		}
		row(seps)
		for _, r := range t.Rows {
			row(r)
		}
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.Notes {
			b.WriteString("- " + n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
