package envelope_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/simulate"
)

// Summary files: every run keeps its own value of every endpoint
// statistic, and the bands are exactly the min and max of those values.
func TestRunEndpointValuesFromSummaries(t *testing.T) {
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	if !env.HasRunEndpointValues() || len(env.FormatWarnings()) > 0 {
		t.Fatalf("demo envelope: per-run values %v, warnings %v", env.HasRunEndpointValues(), env.FormatWarnings())
	}
	for name, ep := range env.Endpoints {
		for _, st := range []struct {
			stat string
			band envelope.Band
			get  func(figures.Latency) float64
		}{
			{"avg", ep.Avg, func(r figures.Latency) float64 { return r.Avg }},
			{"median", ep.Median, func(r figures.Latency) float64 { return r.Median }},
			{"p95", ep.P95, func(r figures.Latency) float64 { return r.P95 }},
			{"p99", ep.P99, func(r figures.Latency) float64 { return r.P99 }},
			{"max", ep.Max, func(r figures.Latency) float64 { return r.Max }},
		} {
			var vals []float64
			for _, r := range env.Runs {
				re, ok := r.Endpoints[name]
				if !ok {
					t.Fatalf("%s: run %s has no value", name, r.Source)
				}
				if re.Count <= 0 {
					t.Errorf("%s: run %s count %d", name, r.Source, re.Count)
				}
				if re.P95CI != nil || re.MedianCI != nil {
					t.Errorf("%s: summary run %s has a sampling interval", name, r.Source)
				}
				vals = append(vals, st.get(re))
			}
			lo, hi := vals[0], vals[0]
			for _, v := range vals {
				lo, hi = min(lo, v), max(hi, v)
			}
			if len(vals) != st.band.N || lo != st.band.Min || hi != st.band.Max {
				t.Errorf("%s %s: run values %v, band %+v", name, st.stat, vals, st.band)
			}
		}
	}
}

// Point files: the run values equal the loader's statistics, and each
// run's median, p95 and p99 (aggregate and per endpoint) carry an
// order-statistic interval that holds the value.
func TestRunValuesFromPoints(t *testing.T) {
	base, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	model, err := simulate.Fit(base)
	if err != nil {
		t.Fatal(err)
	}
	var in []figures.Run
	var loaded []*k6.Run
	for seed := range uint64(3) {
		var buf bytes.Buffer
		if err := model.Write(&buf, simulate.Options{Seed: seed + 1}); err != nil {
			t.Fatal(err)
		}
		name := "sim-" + string(rune('a'+seed)) + ".ndjson"
		opts := figures.LoadOptions(0, "")
		r, err := k6.LoadReader(name, &buf, opts)
		if err != nil {
			t.Fatal(err)
		}
		f, err := figures.Read(r, figures.Source{File: name}, figures.OptionsOf(opts))
		if err != nil {
			t.Fatal(err)
		}
		loaded, in = append(loaded, r), append(in, f)
	}
	env, err := envelope.Compute(in, envelope.Options{Name: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	within := func(what string, v float64, c *figures.Interval) {
		t.Helper()
		if c == nil {
			t.Errorf("%s: no sampling interval", what)
			return
		}
		if !(c.Low <= v && v <= c.High && c.Low < c.High) {
			t.Errorf("%s: %v outside its interval [%v, %v]", what, v, c.Low, c.High)
		}
	}
	for i, r := range env.Runs {
		within(r.Source+" median", r.Median, r.MedianCI)
		within(r.Source+" p95", r.P95, r.P95CI)
		within(r.Source+" p99", r.P99, r.P99CI)
		if len(r.Endpoints) != len(env.Endpoints) {
			t.Fatalf("%s: %d endpoint values, want %d", r.Source, len(r.Endpoints), len(env.Endpoints))
		}
		for name, re := range r.Endpoints {
			m := loaded[i].Metrics[env.Endpoints[name].Metric]
			if m == nil {
				t.Fatalf("%s: no metric for %s", r.Source, name)
			}
			if int64(m.Values["count"]) != re.Count || re.P95 == 0 {
				t.Errorf("%s %s: count %d p95 %v, loader count %v", r.Source, name, re.Count, re.P95, m.Values["count"])
			}
			within(r.Source+" "+name+" median", re.Median, re.MedianCI)
			within(r.Source+" "+name+" p95", re.P95, re.P95CI)
		}
	}
	// The file round-trips with the new fields.
	b, err := envelope.Marshal(env, envelope.YAML)
	if err != nil {
		t.Fatal(err)
	}
	back, err := envelope.Parse("sim.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := back.Runs[0].Endpoints["auth_login"].P95CI, env.Runs[0].Endpoints["auth_login"].P95CI; got == nil || *got != *want {
		t.Errorf("round trip: %v, want %v", got, want)
	}
}

// An envelope file without per-run endpoint values still loads, and says
// what it lacks.
func TestOldEnvelopeLoadsWithWarning(t *testing.T) {
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	for i := range env.Runs {
		env.Runs[i].Endpoints = nil
	}
	for _, f := range []envelope.Format{envelope.YAML, envelope.JSON} {
		b, err := envelope.Marshal(env, f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("endpoints:\n      ")) || bytes.Contains(b, []byte(`"p95_ci"`)) {
			t.Fatalf("%s: the old-form file still has per-run values", f)
		}
		old, err := envelope.Parse("old."+string(f), b)
		if err != nil {
			t.Fatalf("%s: old file refused: %v", f, err)
		}
		w := old.FormatWarnings()
		if len(w) != 1 || !strings.Contains(w[0], "keeps only the endpoint bands") {
			t.Errorf("%s: warnings %q", f, w)
		}
	}
}

func TestRunValuesValidation(t *testing.T) {
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	env.Runs[1].Endpoints["nosuch"] = figures.Latency{P95: 1}
	re := env.Runs[2].Endpoints["auth_login"]
	re.P95CI = &figures.Interval{Low: 900, High: 800}
	env.Runs[2].Endpoints["auth_login"] = re
	b, err := envelope.Marshal(env, envelope.YAML)
	if err != nil {
		t.Fatal(err)
	}
	_, err = envelope.Parse("bad.yaml", b)
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"field runs[1].endpoints.nosuch: names no endpoint", "field runs[2].endpoints.auth_login.p95_ci.low: 900 is above"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.Contains(err.Error(), "bad.yaml:") {
		t.Errorf("error %q names no file", err)
	}
}
