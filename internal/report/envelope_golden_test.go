package report

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/envelope-report")

// TestEnvelopeMarkdownGolden renders the demo envelope and variants of it
// that take every branch of the report (one run, failures, a noisy
// throughput, tag endpoints, warnings, another verdict, no latency) and
// requires byte-identical output to the files in testdata/envelope-report.
func TestEnvelopeMarkdownGolden(t *testing.T) {
	pics := map[string]string{}
	for _, name := range []string{ChartThroughput, ChartIterations, ChartLatency, ChartEndpoints} {
		pics[name] = "<picture>" + name + "</picture>\n"
	}
	in, err := demo.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	base, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	one, err := envelope.Compute(in[:1], envelope.Options{Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	variant := func(edit func(*envelope.Envelope)) *envelope.Envelope {
		env, err := demo.Envelope()
		if err != nil {
			t.Fatal(err)
		}
		edit(env)
		return env
	}
	cases := []struct {
		name string
		env  *envelope.Envelope
		pics map[string]string
	}{
		{"demo", base, pics},
		{"demo-no-charts", base, nil},
		{"single-run", one, nil},
		{"failures-noisy", variant(func(e *envelope.Envelope) {
			e.Name = ""
			e.Errors.Failed, e.Errors.Rate = 37, 37/float64(e.Errors.Total)
			e.Runs[1].Failed, e.Runs[3].Failed = 30, 7
			// A stall: run-1's slowest request at 6.5 s, the others' at most 2.79 s.
			e.Runs[0].Max, e.Latency.Max.Max = 6500, 6500
			envelope.MaxOutliers(e.Runs)
			e.Throughput.CV = 0.12
			e.Saturation.BelowSaturation = false
			e.Saturation.Verdict = "saturated"
			e.Warnings = []string{"run-2 failed requests", "run-4 failed requests"}
			e.Provenance.SkipWarmup = "3m"
			e.Provenance.Workload.Scenarios = []string{"a", "b"}
		}), pics},
		{"steady-tag-endpoints", variant(func(e *envelope.Envelope) {
			e.Throughput.CV = 0.03
			for k, ep := range e.Endpoints {
				ep.Metric, ep.Tag, ep.Value, ep.Share = "", "name", k, 0.25
				if k == "auth_login" {
					ep.Metric, ep.Label = "auth_login", "Auth login (Cognito)"
				}
				ep.P95.Min = 1
				ep.P95.Max = 2
				e.Endpoints[k] = ep
			}
		}), nil},
		{"no-latency", variant(func(e *envelope.Envelope) {
			e.Latency = envelope.Latency{}
			e.Iterations = envelope.Spread{}
			e.Endpoints = nil
			e.Saturation = envelope.Saturation{}
			e.Provenance.Workload = envelope.Workload{}
		}), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := []byte(markdown(t, tc.env, tc.pics))
			path := filepath.Join("testdata", "envelope-report", tc.name+".golden.md")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs from %s:\n%s", tc.name, path, firstDiff(string(want), string(got)))
			}
		})
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\nwant: %s\ngot:  %s", i+1, w, g)
		}
	}
	return ""
}

// markdown renders the envelope report's text or fails the test.
func markdown(tb testing.TB, env *envelope.Envelope, pics map[string]string) string {
	tb.Helper()
	md, err := EnvelopeMarkdown(env, pics)
	if err != nil {
		tb.Fatal(err)
	}
	return string(md)
}
