package main

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
)

// A window or grouping that cannot apply is said on stderr, not silently
// dropped: summary files have no samples, and a window can miss the run.
func TestSummarizeWarnsIgnoredWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		warn string // "" = no warning expected
	}{
		{"summary with skip-warmup", []string{"--skip-warmup", "3m", "../../testdata/k6/generated-v2.2.0/runA-default/runA-summary-export.json"}, "ignored for a summary file"},
		{"summary with group-by", []string{"--group-by", "name", "../../testdata/k6/generated-v2.2.0/runA-default/runA-summary-export.json"}, "--group-by needs a point stream"},
		{"window past the end", []string{"--skip-warmup", "10h", "../../testdata/k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz"}, "the window keeps no samples"},
		{"window inside the run", []string{"--skip-warmup", "2s", "../../testdata/k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz"}, ""},
		{"plain summary", []string{"../../testdata/k6/generated-v2.2.0/runA-default/runA-summary-export.json"}, ""},
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
