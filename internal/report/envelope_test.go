package report

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

// TestEnvelopeReportRestatesDocument renders the demo envelope and checks
// the report restates the baseline document's figures with its rounding.
func TestEnvelopeReportRestatesDocument(t *testing.T) {
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	md := filepath.Join(dir, "report.md")
	if err := WriteEnvelopeReport(env, md); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{
		// Sections, in the reference baseline report's order.
		"## Method", "## Throughput (http_reqs rate)", "## Iteration rate", "## Latency (HTTP overall, http_req_duration)",
		"## Error rate", "## Endpoint bands", "## Aggregate tail behaviour", "## Steady-state operating point", "## Saturation",
		// The reference baseline report's figures.
		"At CV 0.24%, throughput is effectively deterministic steady-state at this load",
		"about 1.25–1.26 (mean 1.25)",
		"sustains about 56.1 req/s mean HTTP throughput with 55.97–56.28 req/s observed across five runs",
		"44.77 iter/s mean iteration rate (44.50–45.01 iter/s band)",
		"~6.3 ms as the mean of per-run medians",
		"p95 values in the 357.7–405.3 ms range across runs",
		"p99 in the 922.7–937.2 ms range",
		"| 2.79 s | 1.11× |", "No run's max is.",
		"Zero HTTP failures were recorded across all runs.",
		"0.00% http_req_failed in all 5 runs (101,882 total HTTP requests).",
		"- Avg (min / max): 7.01 / 9.00 ms (mean 8.02 ms)",
		"- Max (min / max): 272.7 / 798.8 ms",
		"- Avg (min / max): 407.4 / 437.5 ms (mean 417.5 ms)",
		"- Median (min / max): 327.6 / 330.6 ms",
		"- p95 (min / max): 1.10 / 1.39 s",
		"- Avg (min / max): 869.1 / 883.9 ms (mean 875.6 ms)",
		"- Median (min / max): 857.0 / 860.1 ms",
		"- p95 (min / max): 992.0 / 1020 ms",
		"- Avg (min / max): 49.30 / 52.63 ms (mean 50.81 ms)",
		"- Median (min / max): 44.94 / 47.14 ms",
		"- p95 (min / max): 74.02 / 83.13 ms",
		"`auth_login` and `auth_register` have p95 bands above the aggregate p95 band",
		"Verdict: **below saturation**",
		// Beyond the reference baseline report: the CI and the minimum detectable change.
		"95% CI of the mean", "55.93–56.27 req/s",
		// Charts, light and dark, as the second document references them.
		`<source media="(prefers-color-scheme: dark)" srcset="charts/dark/throughput.png">`,
		`<img alt="Per-endpoint latency distribution" src="charts/light/endpoint-latency.png">`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The reference baseline report's two p99 lines use a precision of their own (32.5 /
	// 70.5 ms, 108.08 / 137.01 ms); the report keeps one rule (four
	// significant figures), whose figures round to that report's.
	for _, want := range []string{"- p99 (min / max): 32.50 / 70.50 ms", "- p99 (min / max): 108.1 / 137.0 ms"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, theme := range []string{"light", "dark"} {
		for _, name := range []string{ChartThroughput, ChartIterations, ChartLatency, ChartEndpoints} {
			f, err := os.Open(filepath.Join(dir, "charts", theme, name+".png"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := png.Decode(f); err != nil {
				t.Errorf("%s/%s: %v", theme, name, err)
			}
			_ = f.Close() // only read
		}
	}
}

func TestEnvFig(t *testing.T) {
	tests := map[float64]string{
		55.9696: "55.97", 357.699: "357.7", 7.01338: "7.01", 8.99695: "9.00", 1020.3: "1020",
		991.98: "992.0", 49.3003: "49.30", 99.996: "100.0", 0.137: "0.14", 0: "0",
	}
	for v, want := range tests {
		if got := envFig(v); got != want {
			t.Errorf("envFig(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestEnvelopeReportBadInput(t *testing.T) {
	if err := WriteEnvelopeReport(nil, filepath.Join(t.TempDir(), "r.md")); err == nil {
		t.Error("nil envelope: want an error")
	}
	err := WriteEnvelopeReport(&envelope.Envelope{}, filepath.Join(t.TempDir(), "r.md"))
	if err == nil || !strings.Contains(err.Error(), "throughput.n") {
		t.Errorf("empty envelope: err = %v, want one naming throughput.n", err)
	}
}

func TestEnvEstimates(t *testing.T) {
	cases := []struct {
		s    figures.Support
		want string
	}{
		{figures.Support{}, ""},
		{figures.Support{Runs: 3, Min: 1200, Max: 1400}, "- Percentiles its runs estimate (1,200–1,400 requests a run): median, p95, p99.\n"},
		{figures.Support{Runs: 5, Min: 53, Max: 64}, "- Percentiles its runs estimate (53–64 requests a run): median; not p95 (needs ≥ 200 requests a run) nor p99 (≥ 1,000), which `compare` shows unjudged and the alert rules leave out.\n"},
		{figures.Support{Runs: 1, Min: 12, Max: 12}, "- Percentiles its runs estimate (12 requests a run): none; not median (needs ≥ 20 requests a run) nor p95 (≥ 200) nor p99 (≥ 1,000), which `compare` shows unjudged and the alert rules leave out.\n"},
	}
	for _, tc := range cases {
		if got := envEstimates(tc.s); got != tc.want {
			t.Errorf("envEstimates(%+v) =\n%q, want\n%q", tc.s, got, tc.want)
		}
	}
}
