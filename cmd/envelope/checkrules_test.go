package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/rules"
)

// check-rules runs the source tree's promtool on a rules folder: the
// committed rules/ pass its lint and unit tests; a rule that does not
// parse, and a unit test that expects an alert the rules do not fire,
// fail with promtool's message and its exit status.
func TestCheckRules(t *testing.T) {
	if testing.Short() {
		t.Skip("builds (once) and runs promtool")
	}
	committed := filepath.Join("..", "..", "rules")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ruleText, testText := read(rules.RulesFile), read(rules.TestFile)
	// broken writes the committed files with one replacement applied to
	// the file named.
	broken := func(file, old, repl string) string {
		dir := t.TempDir()
		for name, text := range map[string]string{rules.RulesFile: ruleText, rules.TestFile: testText} {
			if name == file {
				if !strings.Contains(text, old) {
					t.Fatalf("%s lacks %q", name, old)
				}
				text = strings.Replace(text, old, repl, 1)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tt := range []struct {
		name, dir string
		code      int
		out       []string // in stdout and stderr together
	}{
		{"committed", committed, 0, []string{"rules found", "Processing test file: ", "SUCCESS\n"}},
		{"unparsable rule", broken(rules.RulesFile, "expr: sum by (", "expr: sum by (("), 1,
			[]string{"could not parse expression", "promtool check rules failed (exit 1)"}},
		{"failing unit test", broken(rules.TestFile, "alertname: K6EnvelopeRequestsFailing", "alertname: K6EnvelopeNoSuchAlert"), 1,
			[]string{"K6EnvelopeNoSuchAlert", "promtool test rules failed (exit 1)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, so, se := cmdlinetest.Capture(runCLI, "check-rules", "--dir", tt.dir)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, so, se)
			}
			for _, s := range tt.out {
				if !strings.Contains(so+se, s) {
					t.Errorf("output lacks %q\nstdout: %s\nstderr: %s", s, so, se)
				}
			}
		})
	}
}
