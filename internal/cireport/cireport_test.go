package cireport

import (
	"encoding/xml"
	"strings"
	"testing"
)

// A failure, a skip and a pass come out as JUnit readers parse them:
// counts on the suite, failure message and type, skipped message.
func TestWriteJUnit(t *testing.T) {
	var b strings.Builder
	s := Suite{Name: "envelope e vs 2 runs", Class: "envelope.e", Cases: []Case{
		{Name: "aggregate p95", Output: "ok"},
		{Name: "auth_login p95", Failure: "auth_login p95 regressed: +20% <beyond> 10%", Output: "the sentence & more"},
		{Name: "upload p99", Skipped: "no band"},
	}}
	if err := WriteJUnit(&b, s); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suite    struct {
			Skipped int `xml:"skipped,attr"`
			Cases   []struct {
				Name    string `xml:"name,attr"`
				Class   string `xml:"classname,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	cs := got.Suite.Cases
	if got.Tests != 3 || got.Failures != 1 || got.Suite.Skipped != 1 || len(cs) != 3 || cs[0].Failure != nil || cs[0].Class != "envelope.e" ||
		cs[1].Failure == nil || cs[1].Failure.Message != s.Cases[1].Failure || cs[1].Failure.Type != "regression" ||
		cs[2].Skipped == nil || cs[2].Skipped.Message != "no band" {
		t.Errorf("parsed %+v from\n%s", got, b.String())
	}
}

// Cells with pipes or newlines do not break the table.
func TestWriteMarkdown(t *testing.T) {
	var b strings.Builder
	err := WriteMarkdown(&b, Table{Title: "T", Lines: []string{"line"}, Header: []string{"a", "b"},
		Rows: [][]string{{"x|y", "1\n2"}}, Notes: []string{"n"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "### T\n\nline\n\n| a | b |\n| --- | --- |\n| x\\|y | 1 2 |\n\n- n\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}
