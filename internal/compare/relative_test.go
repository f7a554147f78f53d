package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/simulate"
)

// relRuns draws n runs of the demo envelope's model from seed on, each
// with the run-level variance v and the latency factors lat.
func relRuns(t *testing.T, v simulate.Variance, lat map[string]float64, seed uint64, n int) []figures.Run {
	t.Helper()
	model, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	fit, err := simulate.Fit(model)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]figures.Run, n)
	for i := range out {
		name := fmt.Sprintf("run-%d", seed+uint64(i))
		if out[i], err = fit.Run(simulate.Options{Seed: seed + uint64(i), Variance: v, LatencyFactor: lat}, name); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func relEnvelope(t *testing.T, base []figures.Run) *envelope.Envelope {
	t.Helper()
	env, err := envelope.Compute(base, envelope.Options{Name: "relative"})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// A level every endpoint of a run shares (here σ = 15% a run, four
// times the real one) moves an endpoint's own figure, not its level
// against the run's other endpoints: judged against them, a +20% step of
// auth_login is a Regression with an interval less than half as wide.
// The output says what was judged and keeps the endpoint's own change.
func TestAgainstOtherEndpoints(t *testing.T) {
	shared := simulate.Variance{Latency: 0.15}
	env := relEnvelope(t, relRuns(t, shared, nil, 10, 5))
	cands := (relRuns(t, shared, map[string]float64{"auth_login": 1.2}, 20, 3))
	alone, err := variant{reference: refAlone}.compare(env, cands)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := variant{reference: refOthers}.compare(env, cands)
	if err != nil {
		t.Fatal(err)
	}
	a, r := figure(t, alone, "auth_login median"), figure(t, rel, "auth_login median")
	if a.Against != "" || a.Absolute != nil {
		t.Errorf("judged alone, yet against %q, absolute %+v", a.Against, a.Absolute)
	}
	if r.Verdict != Regression || r.ChangePct < 12 || r.ChangePct > 28 || !strings.HasPrefix(r.Against, "the run's other endpoints (actor_get 85%") {
		t.Errorf("against the others: %s %+.1f%% [%+.1f, %+.1f] against %q, want a Regression near +20%% against actor_get 85%%, …", r.Verdict, r.ChangePct, r.CILowPct, r.CIHighPct, r.Against)
	}
	if wa, wr := a.CIHighPct-a.CILowPct, r.CIHighPct-r.CILowPct; wr > wa/2 {
		t.Errorf("interval against the others %.1f points wide, alone %.1f: the shared level did not cancel", wr, wa)
	}
	if r.Absolute == nil || r.Absolute.ChangePct != a.ChangePct || r.Absolute.CILowPct != a.CILowPct || r.Baseline != a.Baseline || r.Candidate != a.Candidate {
		t.Errorf("own change %+v, baseline %.2f, candidate %.2f; judged alone %+.2f%% [%+.2f, %+.2f], %.2f, %.2f", r.Absolute, r.Baseline, r.Candidate, a.ChangePct, a.CILowPct, a.CIHighPct, a.Baseline, a.Candidate)
	}
	if g := figure(t, rel, "actor_get median"); g.Verdict == Regression {
		t.Errorf("actor_get median, unchanged, is a Regression against the others: %+.1f%%", g.ChangePct)
	}
	if p := figure(t, rel, "auth_login p95"); p.Against != "" {
		t.Errorf("auth_login p95 judged against %q, want alone", p.Against)
	}

	var js bytes.Buffer
	if err := rel.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Figures []map[string]any `json:"figures"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, f := range doc.Figures {
		_, has := f["absolute"]
		if want := f["endpoint"] != nil && f["name"] == "median"; has != want || (f["against"] != nil) != want || f["change_pct"] == nil {
			t.Errorf("JSON figure %v %v: absolute %v, against %v", f["endpoint"], f["name"], f["absolute"], f["against"])
		}
	}
	var txt bytes.Buffer
	if err := rel.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"auth_login median vs other endpoints", "auth_login median: judged against the run's other endpoints (actor_get 85%", "; on its own "} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, txt.String())
		}
	}
	for _, c := range rel.Suite().Cases {
		if c.Name == "auth_login median" && (!strings.HasPrefix(c.Failure, "auth_login median vs other endpoints regressed: ") || !strings.Contains(c.Failure, "(on its own +")) {
			t.Errorf("JUnit failure %q does not say what was judged", c.Failure)
		}
	}
	var md bytes.Buffer
	if err := rel.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| auth_login median vs other endpoints |") || !strings.Contains(md.String(), "judged against the run's other endpoints") {
		t.Errorf("markdown output does not say what was judged:\n%s", md.String())
	}
}

// The service got 20% faster but for auth_login: against the others,
// auth_login rose by a quarter, though it did not change. Judged against
// them alone that is a Regression; when its own estimate must also
// have risen beyond half the tolerance, it is not, and the note says why.
func TestAgainstOthersNeedsOwnRise(t *testing.T) {
	env := relEnvelope(t, relRuns(t, simulate.Variance{}, nil, 30, 5))
	cands := (relRuns(t, simulate.Variance{}, map[string]float64{"*": 0.8, "auth_login": 1}, 40, 3))
	for _, tc := range []struct {
		mode    referenceMode
		regress bool
		note    string
	}{
		{refOthers, true, ""},
		{refOthersHalf, false, "is not beyond +5.0%"},
	} {
		res, err := variant{reference: tc.mode}.compare(env, cands)
		if err != nil {
			t.Fatal(err)
		}
		f := figure(t, res, "auth_login median")
		if (f.Verdict == Regression) != tc.regress || !strings.Contains(f.Note, tc.note) || f.ChangePct < 15 {
			t.Errorf("mode %d: auth_login median %s %+.1f%% (own %+.1f%%), note %q; want Regression %v, note with %q",
				tc.mode, f.Verdict, f.ChangePct, f.Absolute.ChangePct, f.Note, tc.regress, tc.note)
		}
	}
}

// Without another endpoint in every run, or from an older envelope file
// that keeps only the bands, an endpoint's median is judged on its own,
// with a note; a candidate lacking one of the other endpoints leaves it
// out of the reference.
func TestAgainstOthersFallback(t *testing.T) {
	base := relRuns(t, simulate.RealVariance(), nil, 50, 5)
	cands := (relRuns(t, simulate.RealVariance(), nil, 60, 2))
	judge := variant{reference: refOthersHalf}

	only := relEnvelope(t, base)
	for k := range only.Endpoints {
		if k != "auth_login" {
			delete(only.Endpoints, k)
		}
	}
	for i := range only.Runs {
		only.Runs[i].Endpoints = map[string]figures.Latency{"auth_login": only.Runs[i].Endpoints["auth_login"]}
	}
	bands := relEnvelope(t, base)
	for i := range bands.Runs {
		bands.Runs[i].Endpoints = nil
	}
	lacking := append([]figures.Run(nil), cands...)
	lacking[1].Endpoints = maps.Clone(lacking[1].Endpoints)
	delete(lacking[1].Endpoints, "actor_get")

	for _, tc := range []struct {
		name    string
		env     *envelope.Envelope
		runs    []figures.Run
		against string // prefix; "" judged alone
		note    string
	}{
		{"one endpoint", only, cands, "", "judged on its own, not against the run's other endpoints: no other endpoint has a median in every baseline and candidate run"},
		{"bands only", bands, cands, "", "judged on its own, not against the run's other endpoints: the envelope keeps no run's endpoint values"},
		{"a candidate without actor_get", relEnvelope(t, base), lacking, "the run's other endpoints (document_upload 84%, auth_register 16%)", ""},
	} {
		res, err := judge.compare(tc.env, tc.runs)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		f := figure(t, res, "auth_login median")
		if f.Verdict == NoData || !strings.HasPrefix(f.Against, tc.against) || (tc.against == "") != (f.Against == "") || !strings.Contains(f.Note, tc.note) {
			t.Errorf("%s: auth_login median %s against %q, note %q; want against %q, note with %q", tc.name, f.Verdict, f.Against, f.Note, tc.against, tc.note)
		}
	}
}
