package rules

import (
	"slices"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
)

// A percentile some baseline run has too few requests to estimate gets
// no alert, and the rule file's header says which and what they need;
// every other test stays, the median of a thin endpoint included.
func TestUnestimatedPercentiles(t *testing.T) {
	envs := testEnvelopes(t)
	cases := []struct {
		file string
		// alerts are the latency alerts generated, "endpoint quantile"
		// ("" for http_req_duration).
		alerts []string
		// skipped are the header's lines, by their start.
		skipped []string
		// saturationP95 says whether the saturation alert reads p95.
		saturationP95 bool
	}{
		{"seed.envelope.json", []string{" 0.95", " 0.99", " 0.5", "actor_get 0.99", "auth_login 0.95", "auth_login 0.5", "auth_register 0.95", "auth_register 0.5", "document_upload 0.95", "document_upload 0.99", "document_upload 0.5"}, nil, true},
		{"short-runs.envelope.json", []string{" 0.95", " 0.5", "auth_login 0.95", "auth_login 0.5", "auth_register 0.5"},
			[]string{"http_req_duration p99: p99 needs ≥ 1,000 requests a run; the runs had 900", "endpoint actor_get p99:", "endpoint auth_register p95:", "endpoint document_upload p95:", "endpoint document_upload p99:", "endpoint document_upload median: median needs ≥ 20 requests a run; document_upload had 15–17"}, true},
		{"tiny-runs.envelope.json", []string{" 0.5", "auth_login 0.5"},
			[]string{"http_req_duration p95:", "http_req_duration p99:", "endpoint actor_get p99:", "endpoint auth_login p95:", "endpoint auth_register p95:", "endpoint auth_register median:", "endpoint document_upload p95:", "endpoint document_upload p99:", "endpoint document_upload median:"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			env := envs[tc.file]
			if env == nil {
				t.Fatalf("no testdata envelope %s", tc.file)
			}
			f, c, err := Generate(env, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			saturationP95 := false
			for _, r := range f.Alerts() {
				switch r.Alert {
				case AlertLatencyHigh, AlertEndpointLatency:
					got = append(got, r.Labels["endpoint"]+" "+r.Labels["quantile"])
				case AlertSaturation:
					saturationP95 = strings.Contains(r.Expr, "histogram_fraction") && strings.Contains(r.Annotations["description"], "p95 latency")
				}
			}
			if !slices.Equal(got, tc.alerts) {
				t.Errorf("latency alerts %q, want %q", got, tc.alerts)
			}
			if saturationP95 != tc.saturationP95 {
				t.Errorf("saturation reads p95: %v, want %v", saturationP95, tc.saturationP95)
			}
			if len(c.Unestimated) != len(tc.skipped) {
				t.Errorf("unestimated %+v, want %d", c.Unestimated, len(tc.skipped))
			}
			for _, format := range []func(*envelope.Envelope, *RuleFile) ([]byte, error){Marshal, MarshalPrometheusRule} {
				b, err := format(env, f)
				if err != nil {
					t.Fatal(err)
				}
				head, _, _ := strings.Cut(string(b), "\n#   ")
				lines := strings.Split(strings.TrimPrefix(string(b), head), "\n#   ")
				for i, want := range tc.skipped {
					if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], want) {
						t.Errorf("header line %d: want %q in\n%s", i+1, want, b[:min(len(b), 1500)])
					}
				}
				if len(tc.skipped) == 0 && strings.Contains(string(b), "too few requests") {
					t.Errorf("header names skipped tests:\n%s", b[:400])
				}
			}
		})
	}
}
