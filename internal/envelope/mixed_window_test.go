package envelope

import (
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
)

// A point stream cut by --skip-warmup next to a whole-run summary differs
// in duration; the refusal says why, so the user knows the window is the
// cause and not the runs.
func TestMixedKindsDurationHint(t *testing.T) {
	run := func(mode k6.Mode, d time.Duration) *k6.Run {
		return &k6.Run{Mode: mode, Duration: d, Metrics: map[string]*k6.Metric{
			"http_reqs": {Name: "http_reqs", Parent: "http_reqs", Type: k6.Counter, Values: map[string]float64{"count": 100, "rate": 1}},
		}}
	}
	for _, tc := range []struct {
		name     string
		a, b     *k6.Run
		wantHint bool
	}{
		{"stream vs summary", run(k6.ModeExact, 3*time.Minute), run(k6.ModeSummary, 6*time.Minute), true},
		{"two summaries", run(k6.ModeSummary, 3*time.Minute), run(k6.ModeSummary, 6*time.Minute), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diffs := compareRuns([]Input{{Run: tc.a, Source: Source{File: "a"}}, {Run: tc.b, Source: Source{File: "b"}}})
			joined := strings.Join(diffs, "\n")
			if !strings.Contains(joined, "duration: a ran 3m0s, b ran 6m0s") {
				t.Fatalf("no duration difference named: %q", joined)
			}
			if got := strings.Contains(joined, "--skip-warmup"); got != tc.wantHint {
				t.Errorf("hint present = %v, want %v: %q", got, tc.wantHint, joined)
			}
		})
	}
}
