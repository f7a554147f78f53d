package main

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// A window or grouping that cannot apply is said on stderr, not silently
// dropped: summary files have no samples, and a window can miss the run.
func TestSummarizeWarnsIgnoredWindow(t *testing.T) {
	summary := fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-summary-export.json")
	ndjson := fixtures.Path(t, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz")
	for _, tc := range []struct {
		name string
		args []string
		warn string // "" = no warning expected
	}{
		{"summary with skip-warmup", []string{"--skip-warmup", "3m", summary}, "ignored for a summary file"},
		{"summary with group-by", []string{"--group-by", "name", summary}, "--group-by needs a point stream"},
		{"window past the end", []string{"--skip-warmup", "10h", ndjson}, "the window keeps no samples"},
		{"window inside the run", []string{"--skip-warmup", "2s", ndjson}, ""},
		{"plain summary", []string{summary}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, se := cmdlinetest.Capture(runCLI, append([]string{"summarize"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, se)
			}
			if tc.warn == "" {
				if strings.Contains(se, "level=WARN") {
					t.Fatalf("unexpected warning: %s", se)
				}
				return
			}
			if !strings.Contains(se, tc.warn) {
				t.Fatalf("stderr lacks %q: %s", tc.warn, se)
			}
		})
	}
}
