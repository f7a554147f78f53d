package simulate

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

// withoutShares is env with the request mix removed, as an envelope
// computed from files without trend counts has it.
func withoutShares(env *envelope.Envelope) *envelope.Envelope {
	c := *env
	c.Endpoints = map[string]envelope.Endpoint{}
	for k, e := range env.Endpoints {
		e.Share = 0
		c.Endpoints[k] = e
	}
	return &c
}

// mixDensity is the model's aggregate latency density (per ms) at x.
func mixDensity(m *Model, x float64) float64 {
	var f float64
	for _, e := range m.Endpoints {
		z := (math.Log(x) - e.Mu) / e.Sigma
		f += e.Share * math.Exp(-z*z/2) / (math.Sqrt(2*math.Pi) * x * e.Sigma)
	}
	return f
}

// check names the aggregate figures of the model (median, p95, p99 of
// the mixture) that fall outside the envelope's bands; empty when the
// model reproduces them all.
func (m *Model) check(env *envelope.Envelope) []string {
	var out []string
	for _, t := range aggTargets(env.Latency) {
		if q := mixQuantile(m.Endpoints, t.p); q < t.band.Min || q > t.band.Max {
			out = append(out, fmt.Sprintf("aggregate %s %.1f ms outside the envelope band %.1f–%.1f ms", t.name, q, t.band.Min, t.band.Max))
		}
	}
	return out
}

// simulate6m writes and loads a 6-minute run of env.
func simulate6m(t *testing.T, env *envelope.Envelope, o Options) figures.Run {
	t.Helper()
	o.Duration = 6 * time.Minute
	key := fmt.Sprintf("%p %+v", env, o)
	if r, ok := runCache[key]; ok {
		return r
	}
	var b bytes.Buffer
	if err := write(&b, env, o); err != nil {
		t.Fatal(err)
	}
	// The loader computes percentiles with k6's own formula.
	run, err := figures.ReadRun(fmt.Sprintf("seed-%d", o.Seed), &b, figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	runCache[key] = run
	return run
}

// runCache holds runs several tests load (tests here run sequentially).
var runCache = map[string]figures.Run{}

// The fitted model itself reproduces the aggregate median and p95 bands,
// and the p99 band within 1.5% (the band spans 1.6%; the endpoint fits
// are least squares over three quantiles each, so they miss a little),
// with the envelope's request mix and with a fitted one.
func TestModelInsideAggregateBands(t *testing.T) {
	env := demoEnvelope(t)
	for name, e := range map[string]*envelope.Envelope{"shares": env, "fitted mix": withoutShares(env)} {
		m, err := Fit(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range m.check(e) {
			if !strings.Contains(msg, "p99") {
				t.Errorf("%s: %s", name, msg)
			}
		}
		if q, b := mixQuantile(m.Endpoints, 0.99), env.Latency.P99; q < b.Min*0.985 || q > b.Max*1.015 {
			t.Errorf("%s: aggregate p99 %.1f ms, band %.1f–%.1f ± 1.5%%", name, q, b.Min, b.Max)
		}
	}
}

// A simulated 6-minute baseline run of the demo envelope is consistent
// with the envelope: its aggregate median, p95 and p99 (k6's percentile
// formula over its points) lie inside the bands widened by a sampling
// tolerance of three standard errors of the sample quantile
// (sqrt(p(1-p)/n) / density at the quantile, from the fitted mixture),
// and its request rate inside the throughput band ±2%. Both with the
// envelope's request mix and with a mix fitted to the aggregate bands.
func TestSimulatedRunInsideEnvelope(t *testing.T) {
	env := demoEnvelope(t)
	cases := []struct {
		name string
		env  *envelope.Envelope
	}{{"shares", env}, {"fitted mix", withoutShares(env)}}
	for _, tc := range cases {
		m, err := Fit(tc.env)
		if err != nil {
			t.Fatal(err)
		}
		for _, seed := range []uint64{1, 2, 3} {
			run := simulate6m(t, tc.env, Options{Seed: seed})
			n := float64(run.Requests)
			for _, q := range figures.Percentiles() {
				p, band := q.Def().Quantile, env.Latency.Band(q)
				se := math.Sqrt(p*(1-p)/n) / mixDensity(m, mixQuantile(m.Endpoints, p))
				lo, hi := band.Min-3*se, band.Max+3*se
				if v, _ := run.Aggregate().Stat(q); v < lo || v > hi {
					t.Errorf("%s seed %d: aggregate %s = %.2f ms, band %.2f–%.2f widened to %.2f–%.2f",
						tc.name, seed, q, v, band.Min, band.Max, lo, hi)
				}
			}
			rate := n / run.Duration().Seconds()
			if lo, hi := env.Throughput.Min*0.98, env.Throughput.Max*1.02; rate < lo || rate > hi {
				t.Errorf("%s seed %d: %.2f req/s, band ±2%% %.2f–%.2f", tc.name, seed, rate, lo, hi)
			}
		}
	}
}

// compare judges baseline-like simulated runs as no regression, and
// finds each injected one: +15% latency on auth_register (register is 2.4%
// of requests, about 500 a run: one run detects it about half the time,
// so the candidate is three runs), and 1%
// errors (one run).
func TestCompareSimulated(t *testing.T) {
	env := demoEnvelope(t)
	reg := map[string]float64{"auth_register": 1.15}
	cases := []struct {
		name     string
		runs     []Options
		figure   string // the figure that must regress, "" for none
		endpoint string
	}{
		{"baseline", []Options{{Seed: 1}, {Seed: 2}, {Seed: 3}}, "", ""},
		{"baseline, one run", []Options{{Seed: 4}}, "", ""},
		{"auth_register +15%", []Options{{Seed: 4, LatencyFactor: reg}, {Seed: 6, LatencyFactor: reg}, {Seed: 8, LatencyFactor: reg}}, "p95", "auth_register"},
		{"1% errors", []Options{{Seed: 5, ErrorRate: 0.01}}, "error_rate", ""},
	}
	for _, tc := range cases {
		var runs []figures.Run
		for _, o := range tc.runs {
			runs = append(runs, simulate6m(t, env, o))
		}
		res, err := compare.Compare(env, runs, compare.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var regressed []string
		found := false
		for _, f := range res.Figures {
			if f.Verdict == compare.Regression {
				regressed = append(regressed, f.Label())
				if string(f.Name) == tc.figure && f.Endpoint == tc.endpoint {
					found = true
				}
			}
		}
		switch {
		case tc.figure == "" && (len(regressed) > 0 || res.Regressed):
			t.Errorf("%s: regressions %v on baseline-like runs", tc.name, regressed)
		case tc.figure != "" && (!found || !res.Regressed):
			t.Errorf("%s: %s %s not judged a regression (regressions: %v)", tc.name, tc.endpoint, tc.figure, regressed)
		}
	}
}
