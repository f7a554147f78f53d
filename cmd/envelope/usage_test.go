package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// Usage errors say what the user most likely meant and whose value did
// not parse; warnings about the input name no source line of the code.
func TestUsageMessages(t *testing.T) {
	summary := fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-summary-export.json")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"baseline", "--skip-warmpu", "3m", summary}, 2, "unknown long flag '--skip-warmpu'; did you mean --skip-warmup?"},
		{[]string{"baseline", "--nme=x", summary}, 2, "did you mean --name?"},
		{[]string{"basline", summary}, 2, `expected command but got "basline"; did you mean "baseline"?`},
		{[]string{"ecs", "operating-pont"}, 2, `did you mean "operating-point"?`},
		{[]string{"baseline", "--skip-warmup", "3", summary}, 2, `--skip-warmup "3": time: missing unit in duration "3" (give a unit: 3m, 90s, 1h)`},
		{[]string{"compare", "--envelope", summary, "--confidence", "abc", summary}, 2, `--confidence "abc": `},
		{[]string{"baseline", "--zzzzzz", summary}, 2, "unknown long flag '--zzzzzz'\n"},
	} {
		code, _, se := cmdlinetest.Capture(runCLI, tc.args...)
		if code != tc.code || !strings.Contains(se, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, se, tc.code, tc.want)
		}
	}
	// A warning about the input (one run: no spread) names no code line.
	code, _, se := cmdlinetest.Capture(runCLI, "baseline", "--out", filepath.Join(t.TempDir(), "e.yaml"), summary)
	if code != 0 || !strings.Contains(se, "level=WARN") || strings.Contains(se, "source=") {
		t.Errorf("baseline of one run: exit %d, stderr %q; want a warning without source=", code, se)
	}
	code, _, se = cmdlinetest.Capture(runCLI, "baseline", "--log.level=debug", "--out", filepath.Join(t.TempDir(), "e.yaml"), summary)
	if code != 0 || !strings.Contains(se, "source=") {
		t.Errorf("baseline at debug level: exit %d, stderr %q; want source lines", code, se)
	}
}
