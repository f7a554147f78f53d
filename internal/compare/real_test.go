package compare

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
)

// Real k6 v2.2.0 runs of the baseline-mix workload (testdata): three
// baseline summary exports, and a run with auth latency ×1.25 and every
// 25th upload failing, as NDJSON. With each baseline run's own endpoint
// values, auth_login p95 (+30%) is a Regression; from the bands alone,
// as older envelope files keep them, the same run is Inconclusive.
func TestRealEndpointRegression(t *testing.T) {
	var files []string
	for _, n := range []string{"baseline-a", "baseline-b", "baseline-c"} {
		files = append(files, filepath.Join("testdata", n+".summary.json"))
	}
	in, err := envelope.ReadFiles(files, k6.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compute(in, envelope.Options{Name: "real"})
	if err != nil {
		t.Fatal(err)
	}
	cand, err := k6.Load(filepath.Join("testdata", "regressed-auth-errors.ndjson.gz"),
		k6.LoadOptions{KeepPoints: true, Stats: []string{"avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compare(env, []*k6.Run{cand}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := figure(t, res, "auth_login p95")
	if f.Verdict != Regression || f.ChangePct < 25 || f.ChangePct > 35 || f.CILowPct <= 10 ||
		!strings.Contains(f.Method, "candidate sampling error from its samples") {
		t.Errorf("per-run values: auth_login p95 %s %+.1f%% [%+.1f, %+.1f] p_holm %.3g (%s), want a Regression near +30%% with the candidate's sampling error",
			f.Verdict, f.ChangePct, f.CILowPct, f.CIHighPct, f.PHolm, f.Method)
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "keeps only the endpoint bands") {
			t.Errorf("current envelope warned: %s", w)
		}
	}
	if g := figure(t, res, "actor_get p95"); g.Verdict == Regression {
		t.Errorf("actor_get p95, unchanged in the run, is a Regression: %+v", g)
	}

	// The same envelope as an older file: bands only.
	for i := range env.Runs {
		env.Runs[i].Endpoints = nil
	}
	old, err := Compare(env, []*k6.Run{cand}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := figure(t, old, "auth_login p95"); f.Verdict != Inconclusive || !strings.Contains(f.Note, "only this endpoint's band") {
		t.Errorf("bands only: auth_login p95 %s (%s), want Inconclusive from the band range", f.Verdict, f.Note)
	}
	warned := false
	for _, w := range old.Warnings {
		warned = warned || strings.Contains(w, "keeps only the endpoint bands")
	}
	if !warned {
		t.Errorf("older envelope: no warning in %q", old.Warnings)
	}
}
