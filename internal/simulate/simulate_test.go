package simulate

import (
	"bytes"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
)

func demoEnvelope(t *testing.T) *envelope.Envelope {
	t.Helper()
	env, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// write simulates one run of env with o into w as NDJSON.
func write(w io.Writer, env *envelope.Envelope, o Options) error {
	m, err := Fit(env)
	if err != nil {
		return err
	}
	return m.Write(w, o)
}

// quantile is endpoint e's latency quantile (ms), before any regression.
func (e Endpoint) quantile(p float64) float64 {
	return math.Exp(e.Mu + e.Sigma*math.Sqrt2*math.Erfinv(2*p-1))
}

// The same seed gives the same bytes; another seed another run.
func TestDeterministic(t *testing.T) {
	env := demoEnvelope(t)
	run := func(seed uint64) []byte {
		var b bytes.Buffer
		if err := write(&b, env, Options{Duration: 20 * time.Second, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b, c := run(7), run(7), run(8)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different output")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same output")
	}
}

// Fitted endpoint distributions land inside (or near) their bands, and the
// fitted request mix reproduces the overall p95 and p99 bands.
func TestFitMatchesBands(t *testing.T) {
	env := demoEnvelope(t)
	m, err := Fit(env)
	if err != nil {
		t.Fatal(err)
	}
	within := func(what string, v float64, b envelope.Band, slack float64) {
		t.Helper()
		if b.Max <= 0 {
			return
		}
		if v < b.Min*(1-slack) || v > b.Max*(1+slack) {
			t.Errorf("%s = %.1f ms, band %.1f–%.1f", what, v, b.Min, b.Max)
		}
	}
	var share float64
	for _, e := range m.Endpoints {
		ep := env.Endpoints[e.Key]
		within(e.Key+" median", e.quantile(0.5), ep.Median, 0.15)
		within(e.Key+" p95", e.quantile(0.95), ep.P95, 0.15)
		within(e.Key+" p99", e.quantile(0.99), ep.P99, 0.15)
		share += e.Share
	}
	if math.Abs(share-1) > 1e-9 {
		t.Errorf("shares sum to %g", share)
	}
	within("overall p95", mixQuantile(m.Endpoints, 0.95), env.Latency.P95, 0.1)
	within("overall p99", mixQuantile(m.Endpoints, 0.99), env.Latency.P99, 0.1)
}

// The k6 loader reads the output, and its figures follow the envelope and
// the injected regressions.
func TestLoadableAndConsistent(t *testing.T) {
	env := demoEnvelope(t)
	cases := []struct {
		name string
		o    Options
		rate float64 // expected req/s factor
		fail float64
	}{
		{"baseline", Options{Seed: 1}, 1, 0},
		{"regressed", Options{Seed: 2, ErrorRate: 0.05, ThroughputFactor: 0.8, LatencyFactor: map[string]float64{"*": 2}}, 0.8, 0.05},
	}
	var p95 [2]float64
	for i, tc := range cases {
		tc.o.Duration = 2 * time.Minute
		var b bytes.Buffer
		if err := write(&b, env, tc.o); err != nil {
			t.Fatal(err)
		}
		run, err := k6.LoadReader(tc.name, &b, k6.LoadOptions{Stats: []string{"p(95)"}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		reqs := run.Metrics["http_reqs"]
		if reqs == nil {
			t.Fatalf("%s: no http_reqs", tc.name)
		}
		want := env.Throughput.Mean * tc.rate * 120
		// Poisson count over 2 minutes: 5 standard deviations.
		if got := reqs.Values["count"]; math.Abs(got-want) > 5*math.Sqrt(want) {
			t.Errorf("%s: %g requests, want about %g", tc.name, got, want)
		}
		if f := run.Metrics["http_req_failed"]; f == nil || math.Abs(f.Values["rate"]-tc.fail) > 0.02 {
			t.Errorf("%s: failed rate %v, want %g", tc.name, f, tc.fail)
		}
		for k, ep := range env.Endpoints {
			if ep.Metric != "" && run.Metrics[ep.Metric] == nil {
				t.Errorf("%s: no custom trend for endpoint %s", tc.name, k)
			}
		}
		p95[i] = run.Metrics["http_req_duration"].Values["p(95)"]
	}
	if r := p95[1] / p95[0]; r < 1.7 || r > 2.3 {
		t.Errorf("latency factor 2 moved p95 by %.2f×", r)
	}
}

func TestBadOptions(t *testing.T) {
	env := demoEnvelope(t)
	for name, o := range map[string]Options{
		"unknown endpoint": {LatencyFactor: map[string]float64{"nope": 1.1}},
		"negative factor":  {LatencyFactor: map[string]float64{"auth_login": -1}},
		"error rate > 1":   {ErrorRate: 2},
	} {
		var b bytes.Buffer
		err := write(&b, env, o)
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if name == "unknown endpoint" && !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
