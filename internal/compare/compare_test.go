package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

// testEnvelope is a five-run baseline shaped like the demo's: ~56
// req/s, p95 358-405 ms, p99 923-937 ms, zero errors, 50 VUs.
func testEnvelope() *envelope.Envelope {
	env := &envelope.Envelope{APIVersion: envelope.APIVersion, Kind: envelope.Kind, Name: "baseline-mix",
		Tolerance: figures.DefaultTolerance()}
	env.Provenance.Workload = envelope.Workload{VUs: 50, Executor: "constant-vus", Duration: "6m0s"}
	rps := []float64{56.0, 56.1, 56.2, 55.97, 56.28}
	p95 := []float64{357.7, 380, 405.3, 370, 390}
	p99 := []float64{922.7, 930, 937.2, 925, 933}
	for i := range rps {
		env.Runs = append(env.Runs, envelope.Run{Run: figures.Run{Source: fmt.Sprintf("run-%d", i+1), RPS: rps[i], P95: p95[i], P99: p99[i], Requests: 20000}})
	}
	env.Errors = envelope.Errors{Failed: 0, Total: 100000, Rate: 0}
	env.Endpoints = map[string]envelope.Endpoint{
		"auth_login":            {Metric: "auth_login", P95: envelope.Band{Min: 1100, Max: 1390, N: 5}, P99: envelope.Band{Min: 1800, Max: 2100, N: 5}},
		"name=GET /actors/{id}": {Tag: "name", Value: "GET /actors/{id}", P95: envelope.Band{Min: 18, Max: 22, N: 5}},
	}
	return env
}

type runSpec struct {
	vus            float64
	rps, p95, p99  float64
	failed, total  float64
	login, actor95 float64
}

// testRun is a six-minute summary run's figures.
func testRun(name string, s runSpec) figures.Run {
	r := figures.Run{Source: name, DurationSeconds: 360, Requests: int64(math.Round(s.rps * 360)), RPS: s.rps, P95: s.p95, P99: s.p99,
		Failed: int64(s.failed), Checked: int64(s.total), Workload: figures.Workload{VUs: int(s.vus), Summary: true}}
	if s.login > 0 || s.actor95 > 0 {
		r.Endpoints = map[string]figures.Latency{}
	}
	if s.login > 0 {
		r.Endpoints["auth_login"] = figures.Latency{P95: s.login, P99: s.login * 1.5}
	}
	if s.actor95 > 0 {
		r.Endpoints["name=GET /actors/{id}"] = figures.Latency{P95: s.actor95}
	}
	return r
}

func figure(t *testing.T, r *Result, label string) Figure {
	t.Helper()
	for _, f := range r.Figures {
		if f.Label() == label {
			return f
		}
	}
	t.Fatalf("no figure %q in %+v", label, r.Figures)
	return Figure{}
}

func TestCompareVerdicts(t *testing.T) {
	same := runSpec{vus: 50, rps: 56.1, p95: 380, p99: 930, total: 20000, login: 1240, actor95: 20}
	slow := same
	slow.p95, slow.p99, slow.login = 380*1.25, 930*1.25, 1240*1.3
	slow2 := slow
	slow2.p95 = 380 * 1.22
	errs := same
	errs.failed = 40
	for _, tc := range []struct {
		name      string
		runs      []figures.Run
		method    string
		want      map[string]Verdict
		regressed bool
	}{
		{"unchanged", []figures.Run{testRun("a", same), testRun("b", same)}, "",
			// auth_login's band (1100-1390 ms over 5 runs) is too wide to
			// prove a change under 10%: Inconclusive, not Pass.
			map[string]Verdict{"aggregate throughput": Pass, "aggregate p95": Pass, "aggregate error rate": Pass, "auth_login p95": Inconclusive}, false},
		{"latency regression", []figures.Run{testRun("a", slow), testRun("b", slow2), testRun("c", slow)}, "",
			// auth_login's +30% [+15%, +48%] from its band alone: a
			// significant rise (p 0.002 within its endpoint's family) whose
			// estimate exceeds the tolerance.
			map[string]Verdict{"aggregate throughput": Pass, "aggregate p95": Regression, "aggregate p99": Regression, "auth_login p95": Regression}, true},
		{"latency regression by bootstrap", []figures.Run{testRun("a", slow), testRun("b", slow2), testRun("c", slow)}, "bootstrap",
			map[string]Verdict{"aggregate p95": Regression, "aggregate throughput": Pass}, true},
		{"errors appear", []figures.Run{testRun("a", errs)}, "",
			map[string]Verdict{"aggregate error rate": Regression, "aggregate p95": Inconclusive}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Compare(testEnvelope(), tc.runs, Options{Method: tc.method, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for label, v := range tc.want {
				if f := figure(t, res, label); f.Verdict != v {
					t.Errorf("%s: %s (change %.1f%% [%.1f, %.1f], p_holm %.3g, %s), want %s", label, f.Verdict, f.ChangePct, f.CILowPct, f.CIHighPct, f.PHolm, f.Note, v)
				}
			}
			if res.Regressed != tc.regressed {
				t.Errorf("regressed %v, want %v", res.Regressed, tc.regressed)
			}
			for _, f := range res.Figures {
				if !math.IsNaN(f.P) && f.PHolm < f.P {
					t.Errorf("%s: Holm-adjusted p %v below raw p %v", f.Label(), f.PHolm, f.P)
				}
			}
		})
	}
}

// One candidate run: the interval is Welch's with the baseline's spread,
// SE = s·√(1/5 + 1), df 4, t = 2.776445; computed here by hand.
func TestCompareIntervalByHand(t *testing.T) {
	run := runSpec{vus: 50, rps: 56.1, p95: 420, p99: 930, total: 20000, login: 1240, actor95: 20}
	res, err := Compare(testEnvelope(), []figures.Run{testRun("a", run)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := []float64{357.7, 380, 405.3, 370, 390}
	var m, ss float64
	for _, b := range base {
		m += math.Log(b)
	}
	m /= 5
	for _, b := range base {
		ss += (math.Log(b) - m) * (math.Log(b) - m)
	}
	se := math.Sqrt(ss/4) * math.Sqrt(1.0/5+1)
	d := math.Log(420) - m
	f := figure(t, res, "aggregate p95")
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"change", f.ChangePct, 100 * (math.Exp(d) - 1)},
		{"ci low", f.CILowPct, 100 * (math.Exp(d-2.776445*se) - 1)},
		{"ci high", f.CIHighPct, 100 * (math.Exp(d+2.776445*se) - 1)},
	} {
		if math.Abs(c.got-c.want) > 1e-3 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// A wide interval straddling the 10% tolerance: neither Pass nor
	// Regression, and the note says more runs are needed.
	if f.Verdict != Inconclusive || !strings.Contains(f.Note, "more runs are needed") {
		t.Errorf("verdict %s, note %q", f.Verdict, f.Note)
	}
}

func TestCompareWorkload(t *testing.T) {
	big := runSpec{vus: 100, rps: 98, p95: 480, p99: 1100, total: 30000, login: 1300, actor95: 21}
	_, err := Compare(testEnvelope(), []figures.Run{testRun("step-100", big)}, Options{})
	var we *WorkloadError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "step-100 ran 100 VUs, the baseline 50") || !strings.Contains(err.Error(), "--allow-workload-change") {
		t.Fatalf("error %v", err)
	}
	res, err := Compare(testEnvelope(), []figures.Run{testRun("step-100", big), testRun("step-100b", big)}, Options{AllowWorkloadChange: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sentences) == 0 || !strings.HasPrefix(res.Sentences[1], "At 100 VUs, aggregate p95 rose") {
		t.Errorf("sentences %q", res.Sentences)
	}
	// Runs that carry none of the envelope's endpoints are another workload.
	other := runSpec{vus: 50, rps: 56, p95: 380, p99: 930, total: 20000}
	if _, err := Compare(testEnvelope(), []figures.Run{testRun("x", other)}, Options{}); err == nil || !strings.Contains(err.Error(), "none of the envelope's 2 endpoints") {
		t.Errorf("error %v", err)
	}
}

func TestCompareOutputs(t *testing.T) {
	// Two candidate runs vary like baseline runs (the pooled run-level
	// spread, ~4% here), so a rise must clear the tolerance by that much:
	// +35% does, after Holm over 7 figures.
	run := runSpec{vus: 50, rps: 56.1, p95: 380 * 1.35, p99: 930, total: 20000, login: 1240, actor95: 20}
	res, err := Compare(testEnvelope(), []figures.Run{testRun("a", run), testRun("b", run)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := res.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Aggregate p95 rose 34.9% versus baseline (95% CI", "Result: REGRESSION", "auth_login p95"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Regressed bool `json:"regressed"`
		Figures   []struct {
			Name    string   `json:"name"`
			Verdict string   `json:"verdict"`
			P       *float64 `json:"p"`
		} `json:"figures"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("%v\n%s", err, js.String())
	}
	if !back.Regressed || back.Figures[2].Name != "p95" || back.Figures[2].Verdict != "Regression" || back.Figures[2].P == nil {
		t.Errorf("json %s", js.String())
	}
}

func TestCompareBadInput(t *testing.T) {
	env := testEnvelope()
	env.Runs = env.Runs[:1]
	run := testRun("a", runSpec{vus: 50, rps: 56, p95: 380, p99: 930, total: 10, login: 1, actor95: 1})
	if _, err := Compare(env, []figures.Run{run}, Options{}); err == nil || !strings.Contains(err.Error(), "1 baseline run(s)") {
		t.Errorf("one-run envelope: %v", err)
	}
	if _, err := Compare(testEnvelope(), nil, Options{}); err == nil {
		t.Error("no runs accepted")
	}
	if _, err := Compare(testEnvelope(), []figures.Run{run}, Options{Method: "magic"}); err == nil {
		t.Error("unknown method accepted")
	}
}

// BenchmarkCompare: five baseline runs, three candidates, two endpoints.
func BenchmarkCompare(b *testing.B) {
	run := runSpec{vus: 50, rps: 56.1, p95: 470, p99: 1100, total: 20000, login: 1500, actor95: 21}
	runs := []figures.Run{testRun("a", run), testRun("b", run), testRun("c", run)}
	env := testEnvelope()
	for b.Loop() {
		if _, err := Compare(env, runs, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// An endpoint with a display name is named by it in the text, and keeps
// its key in the JSON beside the label.
func TestCompareEndpointLabels(t *testing.T) {
	env := testEnvelope()
	ep := env.Endpoints["name=GET /actors/{id}"]
	ep.Label = "Actor by id"
	env.Endpoints["name=GET /actors/{id}"] = ep
	run := runSpec{vus: 50, rps: 56.1, p95: 380, p99: 930, total: 20000, login: 1240, actor95: 20}
	res, err := Compare(env, []figures.Run{testRun("a", run), testRun("b", run)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := res.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "Actor by id p95") || strings.Contains(txt.String(), "GET /actors/{id} p95") {
		t.Errorf("text does not name the endpoint by its label:\n%s", txt.String())
	}
	if !strings.Contains(txt.String(), "auth_login p95") {
		t.Errorf("an endpoint without a label lost its key:\n%s", txt.String())
	}
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"endpoint": "name=GET /actors/{id}",`) || !strings.Contains(js.String(), `"endpoint_label": "Actor by id"`) {
		t.Errorf("json lacks the key and the label:\n%s", js.String())
	}
}

// The decision rule on figures built by hand: a rise whose estimate is
// beyond the tolerance is a Regression only when significant after Holm
// within its family; one endpoint's figures do not dilute the headline.
func TestDecide(t *testing.T) {
	fig := func(endpoint string, p float64, beyond bool, v Verdict) Figure {
		return Figure{Name: "p95", Endpoint: endpoint, P: p, beyond: beyond, Verdict: v}
	}
	c := &comparer{tol: figures.DefaultTolerance(), judging: judgeConfig{}.resolved(), res: &Result{Figures: []Figure{
		fig("", 0.02, true, Inconclusive),   // headline: 0.02 × 2 = 0.04 after Holm: not significant
		fig("", 0.01, true, Inconclusive),   // 0.01 × 3 = 0.03: not significant
		fig("", 0.5, false, Pass),           // stays Pass
		fig("a", 0.004, true, Inconclusive), // 0.004 × 3 = 0.012: Regression
		fig("a", 0.3, false, Inconclusive),
		fig("a", 0.3, false, Pass),
		fig("b", 0.001, false, Inconclusive), // significant, estimate within tolerance
		fig("b", math.NaN(), false, NoData),
	}}}
	c.decide()
	want := []Verdict{Inconclusive, Inconclusive, Pass, Regression, Inconclusive, Pass, Inconclusive, NoData}
	for i, f := range c.res.Figures {
		if f.Verdict != want[i] {
			t.Errorf("figure %d (%s, p %.3g, p_holm %.3g): %s, want %s", i, f.Family, f.P, f.PHolm, f.Verdict, want[i])
		}
	}
	if f := c.res.Figures[0]; !strings.Contains(f.Note, "not significant after Holm's correction across the 3 figures of its family") {
		t.Errorf("note %q", f.Note)
	}
	if !c.res.Regressed {
		t.Error("not regressed")
	}
	if c.res.Figures[3].Family != "endpoint a" || c.res.Figures[0].Family != FamilyHeadline {
		t.Errorf("families %q, %q", c.res.Figures[3].Family, c.res.Figures[0].Family)
	}
}
