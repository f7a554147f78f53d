package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// Help is output (stdout, exit 0); a missing command is a usage error
// (usage on stderr, exit 2), as Go tools and promtool do.
func TestHelpAndUsageConventions(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		out, err   string // wanted in stdout, stderr
		quietOther bool   // the other stream stays empty
	}{
		{[]string{"--help"}, 0, "usage: envelope", "", true},
		{[]string{"-h"}, 0, "Commands:", "", true},
		{[]string{"help", "compare"}, 0, "usage: envelope compare", "", true},
		{[]string{"compare", "--help"}, 0, "usage: envelope compare", "", true},
		{[]string{"--version"}, 0, "envelope, version", "", true},
		{nil, 2, "", "usage: envelope", true},
		{[]string{"ecs"}, 2, "", "a command is required", true},
		{[]string{"compare", "--no-such-flag"}, 2, "", "unknown long flag", true},
	} {
		code, so, se := cmdlinetest.Capture(runCLI, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
		if tc.out != "" && !strings.Contains(so, tc.out) {
			t.Errorf("%v: stdout lacks %q:\n%s", tc.args, tc.out, so)
		}
		if tc.err != "" && !strings.Contains(se, tc.err) {
			t.Errorf("%v: stderr lacks %q:\n%s", tc.args, tc.err, se)
		}
		if tc.quietOther && tc.out != "" && se != "" {
			t.Errorf("%v: help also wrote to stderr: %s", tc.args, se)
		}
		if tc.quietOther && tc.err != "" && so != "" {
			t.Errorf("%v: usage error wrote to stdout: %s", tc.args, so)
		}
	}
}

// Every enum flag's help lists its choices; demo serves by default and
// --no-serve turns that off.
func TestFlagHelpListsChoices(t *testing.T) {
	for cmd, wants := range map[string][]string{
		"compare":   {"One of: welch, bootstrap.", "One of: text, json, junit, markdown, html."},
		"summarize": {"One of: text, json.", "One of: exact, sketch."},
		"report":    {"One of: markdown, json."},
		"baseline":  {"One of: yaml, json."},
		"backtest":  {"One of: text, json."},
		"demo":      {"--[no-]serve"},
	} {
		code, so, se := cmdlinetest.Capture(runCLI, cmd, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d: %s", cmd, code, se)
		}
		flat := strings.Join(strings.Fields(so), " ")
		for _, w := range wants {
			if !strings.Contains(flat, w) {
				t.Errorf("%s --help lacks %q", cmd, w)
			}
		}
	}
}

// One exit-code policy (bad input is 2 in every command) and one message
// for a missing file, whoever notices it.
func TestExitCodesAndMissingFiles(t *testing.T) {
	dir := t.TempDir()
	nope := filepath.Join(dir, "nope.json")
	for _, args := range [][]string{
		{"summarize", nope},
		{"report", "--envelope", nope},
		{"compare", "--envelope", nope, nope},
		{"baseline", "--out", filepath.Join(dir, "e.yaml"), nope},
		{"backtest", "--envelope", nope, nope},
		{"report", "--k6-options", nope, nope},
	} {
		code, _, se := cmdlinetest.Capture(runCLI, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		if want := "envelope: " + nope + ": no such file\n"; se != want {
			t.Errorf("%v: stderr %q, want %q", args, se, want)
		}
	}
}

// baseline warns when a run file is given twice (or two files hold the
// same bytes).
func TestBaselineWarnsOnDuplicateRuns(t *testing.T) {
	runs := demoRuns(3)
	out := filepath.Join(t.TempDir(), "e.yaml")
	code, _, se := cmdlinetest.Capture(runCLI, append([]string{"baseline", "--out", out}, append(runs, runs[1])...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	if !strings.Contains(se, "has the same content as") || !strings.Contains(se, filepath.Base(runs[1])) {
		t.Errorf("no duplicate warning: %s", se)
	}
	code, _, se = cmdlinetest.Capture(runCLI, append([]string{"baseline", "--out", out}, runs...)...)
	if code != 0 || strings.Contains(se, "same content") {
		t.Errorf("distinct runs: exit %d, %s", code, se)
	}
}

// The demo's compare lines say which runs were compared with which.
func TestDemoCompareLinesNameTheRuns(t *testing.T) {
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	in, err := demo.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	lines, err := demoCompareLines(env, in)
	if err != nil {
		t.Fatal(err)
	}
	want := `candidates run-4.json, run-5.json against the envelope "` + env.Name + `" of run-1.json, run-2.json, run-3.json, run-4.json, run-5.json: no regression`
	if len(lines) < 2 || lines[0] != want {
		t.Errorf("first line %q, want %q (of %d lines)", lines[0], want, len(lines))
	}
}

// Each invocation parses on a fresh app: flags and repeatable values of
// one run do not carry over into the next.
func TestNoFlagStateBetweenRuns(t *testing.T) {
	file := fixtures.Path(t, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz")
	code, so, se := cmdlinetest.Capture(runCLI, "summarize", "--stats", "p(99)", "--submetric", "http_req_duration{method:GET}", file)
	if code != 0 || !strings.Contains(so, "http_req_duration{method:GET}") || !strings.Contains(so, "p(99)=") {
		t.Fatalf("with flags: exit %d\nstdout: %s\nstderr: %s", code, so, se)
	}
	code, so, se = cmdlinetest.Capture(runCLI, "summarize", file)
	if code != 0 {
		t.Fatalf("plain: exit %d: %s", code, se)
	}
	if strings.Contains(so, "method:GET") || strings.Contains(so, "p(99)=") {
		t.Errorf("the first run's --submetric or --stats carried over:\n%s", so)
	}
	if n := strings.Count(so, file); n != 1 {
		t.Errorf("the file is summarized %d times, want once:\n%s", n, so)
	}
}

// failingWriter refuses every write, as a full disk or closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A command whose output cannot be written exits 2 and says so.
func TestOutputWriteFailure(t *testing.T) {
	var e bytes.Buffer
	env := filepath.Join("..", "..", "internal", "demo", "envelope.yaml")
	code := runCLI([]string{"rules", "--envelope", env, "--out", t.TempDir()}, failingWriter{}, &e)
	if code != 2 || e.String() != "envelope: writing output: no space left on device\n" {
		t.Errorf("exit %d, stderr %q; want 2 and the write error", code, e.String())
	}
}
