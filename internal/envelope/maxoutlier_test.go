package envelope

import (
	"fmt"
	"testing"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// The ten real runs of one service setting (history fixture, runs 1–10)
// have maxima of 1.7–5.2 s, each far above its p99 (about 1 s): none is
// an outlier. A run whose slowest request took more than twice every
// other run's is, and only it.
func TestMaxOutliersRealRuns(t *testing.T) {
	var paths []string
	for i := 1; i <= 10; i++ {
		paths = append(paths, fixtures.Path(t, fmt.Sprintf("k6/history-v2.2.0/run-%02d.summary.json", i)))
	}
	in, err := figures.ReadFiles(paths, figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	env, err := Compute(in, Options{Name: "history"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range env.Runs {
		if r.Max <= r.P99 {
			t.Fatalf("%s: max %v not above p99 %v: the test needs maxima above p99", r.Source, r.Max, r.P99)
		}
		if r.MaxOutlier {
			t.Errorf("%s: max %.0f ms (p99 %.0f ms) marked an outlier among maxima of like size", r.Source, r.Max, r.P99)
		}
	}
	largest := 0.0
	for _, r := range env.Runs {
		largest = max(largest, r.Max)
	}
	for _, tc := range []struct {
		factor float64
		want   bool
	}{{MaxOutlierFactor * 0.99, false}, {MaxOutlierFactor * 1.01, true}} {
		runs := append([]Run(nil), env.Runs...)
		runs[2].Max = largest * tc.factor
		MaxOutliers(runs)
		for i, r := range runs {
			if r.MaxOutlier != (tc.want && i == 2) {
				t.Errorf("run 3's max at %.2f× the others' largest: %s marked %v", tc.factor, r.Source, r.MaxOutlier)
			}
		}
	}
}
