package backtest

import (
	"context"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// SkipWarmup replays only what follows the warm-up: the 6-minute run
// keeps its last 3 minutes, and the regression in them still fires.
func TestSkipWarmup(t *testing.T) {
	in, err := figures.ReadFiles([]string{fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-a.summary.json"), fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-b.summary.json")}, figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compute(in, envelope.Options{Name: "ab"})
	if err != nil {
		t.Fatal(err)
	}
	files := rulesFor(t, env)
	ctx := context.Background()
	for _, tc := range []struct {
		file     string
		skip     time.Duration
		min, max float64 // seconds of points replayed
		fire     string
	}{
		{fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-c.ndjson.gz"), 0, 350, 375, ""},
		{fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-c.ndjson.gz"), 3 * time.Minute, 170, 195, ""},
		{fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz"), 3 * time.Minute, 170, 195, "K6EnvelopeRequestsFailing"},
	} {
		r, err := File(ctx, env, files, tc.file, Options{SkipWarmup: tc.skip})
		if err != nil {
			t.Fatal(err)
		}
		if r.DurationS < tc.min || r.DurationS > tc.max {
			t.Errorf("%s skip %s: %gs of points, want %g–%g", tc.file, tc.skip, r.DurationS, tc.min, tc.max)
		}
		if tc.fire == "" && len(r.Alerts) > 0 {
			t.Errorf("%s skip %s: false alarms %v", tc.file, tc.skip, names(r))
		}
		if tc.fire != "" && firstFiring(r, tc.fire) < 0 {
			t.Errorf("%s skip %s: %s did not fire; fired %v", tc.file, tc.skip, tc.fire, names(r))
		}
	}
	if _, err := File(ctx, env, files, fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-c.ndjson.gz"), Options{SkipWarmup: time.Hour}); err == nil {
		t.Error("skipping more than the run: no error")
	}
}
