package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/rules"
)

// The README's walkthrough through the command line on the real runs: an
// envelope whose match the runs do not carry (envelope="my-baseline" over
// runs made without that tag) makes backtest say that nothing was
// judged, naming the match and the run's testid, and exit 2, never "no
// alert fired" alone; a match the runs carry fires on the regressed run.
func TestBacktestMatch(t *testing.T) {
	regressed := fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz")
	for _, tt := range []struct {
		match    string
		code     int
		stdout   []string
		stderr   string
		unwanted string
	}{
		{`envelope="my-baseline"`, 2,
			[]string{`nothing was judged: the envelope's match envelope="my-baseline" selects none of the run's series`, "testid (regressed-auth-errors)"},
			"selects none of the series of " + regressed + ": nothing was judged", "no alert fired"},
		{`testid=~"(baseline|regressed)-.*"`, 0,
			[]string{"alert(s) fired", rules.AlertRequestsFailing},
			"", "nothing was judged"},
	} {
		t.Run(tt.match, func(t *testing.T) {
			dir := t.TempDir()
			env, rulesDir := filepath.Join(dir, "envelope.yaml"), filepath.Join(dir, "rules")
			args := append([]string{"baseline", "--name", "my-baseline", "--match", tt.match, "--skip-warmup", "3m", "--out", env}, fixtures.Baselines(t)...)
			if code, _, se := cmdlinetest.Capture(runCLI, args...); code != 0 {
				t.Fatalf("baseline: exit %d: %s", code, se)
			}
			if code, _, se := cmdlinetest.Capture(runCLI, "rules", "--envelope", env, "--out", rulesDir); code != 0 {
				t.Fatalf("rules: exit %d: %s", code, se)
			}
			code, so, se := cmdlinetest.Capture(runCLI, "backtest", "--envelope", env, "--rules", rulesDir, regressed)
			if code != tt.code {
				t.Errorf("backtest exit %d, want %d; stderr: %s", code, tt.code, se)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(so, s) {
					t.Errorf("stdout lacks %q:\n%s", s, so)
				}
			}
			if !strings.Contains(se, tt.stderr) {
				t.Errorf("stderr lacks %q: %s", tt.stderr, se)
			}
			if strings.Contains(so, tt.unwanted) {
				t.Errorf("stdout says %q:\n%s", tt.unwanted, so)
			}
		})
	}
}
