package compare

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// Real k6 v2.2.0 runs of the baseline-mix workload (testdata): three
// baseline summary exports, and a run with auth latency ×1.25 and every
// 25th upload failing, as NDJSON. With each baseline run's own endpoint
// values, auth_login p95 (+30%) is a Regression; from the bands alone,
// as older envelope files keep them, too: the rise is significant and
// its estimate beyond the tolerance.
func TestRealEndpointRegression(t *testing.T) {
	var files []string
	for _, n := range []string{"baseline-a", "baseline-b", "baseline-c"} {
		files = append(files, fixtures.Path(t, "k6/baseline-mix-v2.2.0/"+n+".summary.json"))
	}
	in, err := figures.ReadFiles(files, figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compute(in, envelope.Options{Name: "real"})
	if err != nil {
		t.Fatal(err)
	}
	cand, err := figures.ReadFiles([]string{fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz")}, figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compare(env, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The auth step (×1.25) is a Regression of auth_login's median. Its
	// p95 rises as much, but the candidate's p95 moves between stretches
	// of the run (batches of a minute from 1,256 to 1,673 ms), so one run
	// shows a significant rise whose interval still reaches below the
	// tolerance: Inconclusive, with more runs asked for.
	if m := figure(t, res, "auth_login median"); m.Verdict != Regression {
		t.Errorf("auth_login median %s %+.1f%% [%+.1f, %+.1f], want a Regression", m.Verdict, m.ChangePct, m.CILowPct, m.CIHighPct)
	}
	f := figure(t, res, "auth_login p95")
	if f.ChangePct < 25 || f.ChangePct > 35 || f.CILowPct <= 0 ||
		!strings.Contains(f.Method, "candidate sampling error from its samples") ||
		(f.Verdict != Regression && (f.Verdict != Inconclusive || !strings.Contains(f.Note, "more runs are needed"))) {
		t.Errorf("per-run values: auth_login p95 %s %+.1f%% [%+.1f, %+.1f] p_holm %.3g (%s; %s), want a significant rise near +30%% with the candidate's sampling error, judged or with more runs asked for",
			f.Verdict, f.ChangePct, f.CILowPct, f.CIHighPct, f.PHolm, f.Method, f.Note)
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
	old, err := Compare(env, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f2 := figure(t, old, "auth_login p95"); f2.Verdict != Regression || !strings.Contains(f2.Note, "only this endpoint's band") {
		t.Errorf("bands only: auth_login p95 %s %+.1f%% [%+.1f, %+.1f] (%s), want a Regression from the band range",
			f2.Verdict, f2.ChangePct, f2.CILowPct, f2.CIHighPct, f2.Note)
	}
	warned := false
	for _, w := range old.Warnings {
		warned = warned || strings.Contains(w, "keeps only the endpoint bands")
	}
	if !warned {
		t.Errorf("older envelope: no warning in %q", old.Warnings)
	}
}

// realCleanGroups are the real runs made under the same settings, each
// group judged only against its own members: the history's runs 01–10,
// 11–19 with 21–22 (upload ×1.2; run-20 was a one-off slow run), 23–30
// (auth ×0.9 too), and the three 6-minute baselines.
func realCleanGroups(t *testing.T) [][]figures.Run {
	t.Helper()
	opts := figures.LoadOptions(0, "")
	load := func(paths []string) []figures.Run {
		in, err := figures.ReadFiles(paths, opts)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	groups := append(fixtures.HistoryCleanGroups(t), fixtures.Baselines(t))
	out := make([][]figures.Run, len(groups))
	for i, g := range groups {
		out[i] = load(g)
	}
	return out
}

// Leave-one-out over the real clean runs: each run compared with the
// envelope of the other runs of its group. Every Regression is a false
// alarm on real data; docs/compare.md gives the count, and the test
// fails when it grows.
func TestRealLeaveOneOut(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 32 real runs")
	}
	const documented = 0 // docs/compare.md, "Leave-one-out on real runs"
	groups := realCleanGroups(t)
	for vi, v := range powerVariants() {
		alarms, n := 0, 0
		for _, g := range groups {
			for i := range g {
				others := append(append([]figures.Run{}, g[:i]...), g[i+1:]...)
				env, err := envelope.Compute(others, envelope.Options{Name: "loo"})
				if err != nil {
					t.Fatal(err)
				}
				res, err := v.variant.compare(env, g[i:i+1])
				if err != nil {
					t.Fatal(err)
				}
				n++
				for _, f := range res.Figures {
					if f.Verdict == Regression {
						t.Logf("%s: %s against %d others: %s %+.1f%% [%+.1f, %+.1f] p_holm %.3g", v.name, filepath.Base(g[i].Source), len(others), f.Label(), f.ChangePct, f.CILowPct, f.CIHighPct, f.PHolm)
					}
				}
				if res.Regressed {
					alarms++
				}
			}
		}
		t.Logf("%s: %d of %d real clean runs compared Regression against the envelope of the others", v.name, alarms, n)
		if vi == 0 && alarms > documented {
			t.Errorf("%d of %d real clean runs compared Regression, %d documented", alarms, n, documented)
		}
	}
}

// The real history fixture under every variant: an envelope from
// run-01..05, three later runs compared together. After the upload step
// (run-11..13, document_upload ×1.2) the comparison must regress on
// document_upload and nothing else; three clean runs (run-06..08) must
// not; after the auth improvement (run-23..25, uploads still slower)
// only document_upload may be flagged. The default must meet all three
// (the command's own test, TestCompareHistorySteps, checks its output);
// the other variants' outcomes are logged for docs/compare.md.
func TestRealHistoryVariants(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 14 real runs")
	}
	opts := figures.LoadOptions(0, "")
	load := func(ids ...int) []figures.Run {
		var paths []string
		for _, i := range ids {
			paths = append(paths, fixtures.Path(t, fmt.Sprintf("k6/history-v2.2.0/run-%02d.ndjson.gz", i)))
		}
		in, err := figures.ReadFiles(paths, opts)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	env, err := envelope.Compute(load(1, 2, 3, 4, 5), envelope.Options{Name: "history"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		runs      []int
		regressed bool
	}{
		{"after the upload step", []int{11, 12, 13}, true},
		{"clean", []int{6, 7, 8}, false},
		{"after the auth improvement", []int{23, 24, 25}, true},
	}
	cands := make([][]figures.Run, len(cases))
	for i, tc := range cases {
		cands[i] = load(tc.runs...)
	}
	for vi, v := range powerVariants() {
		for i, tc := range cases {
			res, err := v.variant.compare(env, cands[i])
			if err != nil {
				t.Fatal(err)
			}
			var flagged []string
			ok := res.Regressed == tc.regressed
			for _, f := range res.Figures {
				if f.Verdict == Regression {
					flagged = append(flagged, fmt.Sprintf("%s %+.1f%% [%+.1f, %+.1f]", f.Label(), f.ChangePct, f.CILowPct, f.CIHighPct))
					ok = ok && f.Endpoint == "document_upload"
				}
			}
			t.Logf("%s: %s: regressed %v, ok %v: %s", v.name, tc.name, res.Regressed, ok, strings.Join(flagged, "; "))
			if vi == 0 && !ok {
				t.Errorf("%s: regressed %v (want %v), flagged %s", tc.name, res.Regressed, tc.regressed, strings.Join(flagged, "; "))
			}
		}
	}
}
