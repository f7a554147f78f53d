package demo

import (
	"bytes"
	"math"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
)

// r rounds as the reference baseline report does before comparing.
func r(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// TestSeedFigures checks the embedded runs against every figure of the
// reference baseline report, at that report's own rounding.
func TestSeedFigures(t *testing.T) {
	env, err := Envelope()
	if err != nil {
		t.Fatal(err)
	}
	ep := env.Endpoints
	tests := []struct {
		name     string
		got      float64
		decimals int
		want     float64
	}{
		{"throughput mean", env.Throughput.Mean, 1, 56.1},
		{"throughput min", env.Throughput.Min, 2, 55.97},
		{"throughput max", env.Throughput.Max, 2, 56.28},
		{"throughput CV %", 100 * env.Throughput.CV, 2, 0.24},
		{"iteration mean", env.Iterations.Mean, 2, 44.77},
		{"iteration min", env.Iterations.Min, 2, 44.50},
		{"iteration max", env.Iterations.Max, 2, 45.01},
		{"requests/iteration mean", env.RequestsPerIteration.Mean, 2, 1.25},
		{"requests/iteration min", env.RequestsPerIteration.Min, 2, 1.25},
		{"requests/iteration max", env.RequestsPerIteration.Max, 2, 1.26},
		{"p95 min", env.Latency.P95.Min, 1, 357.7},
		{"p95 max", env.Latency.P95.Max, 1, 405.3},
		{"p99 min", env.Latency.P99.Min, 1, 922.7},
		{"p99 max", env.Latency.P99.Max, 1, 937.2},
		{"mean of medians", env.Latency.Median.Mean, 1, 6.3},
		{"max min (s)", env.Latency.Max.Min / 1000, 1, 2.1},
		{"max max (s)", env.Latency.Max.Max / 1000, 1, 2.8},
		{"requests", float64(env.Errors.Total), 0, 101882},
		{"failed", float64(env.Errors.Failed), 0, 0},
		{"actor avg min", ep["actor_get"].Avg.Min, 2, 7.01},
		{"actor avg max", ep["actor_get"].Avg.Max, 2, 9.00},
		{"actor avg mean", ep["actor_get"].Avg.Mean, 2, 8.02},
		{"actor p99 min", ep["actor_get"].P99.Min, 1, 32.5},
		{"actor p99 max", ep["actor_get"].P99.Max, 1, 70.5},
		{"actor max min", ep["actor_get"].Max.Min, 1, 272.7},
		{"actor max max", ep["actor_get"].Max.Max, 1, 798.8},
		{"login avg min", ep["auth_login"].Avg.Min, 1, 407.4},
		{"login avg max", ep["auth_login"].Avg.Max, 1, 437.5},
		{"login avg mean", ep["auth_login"].Avg.Mean, 1, 417.5},
		{"login median min", ep["auth_login"].Median.Min, 1, 327.6},
		{"login median max", ep["auth_login"].Median.Max, 1, 330.6},
		{"login p95 min (s)", ep["auth_login"].P95.Min / 1000, 2, 1.10},
		{"login p95 max (s)", ep["auth_login"].P95.Max / 1000, 2, 1.39},
		{"register avg min", ep["auth_register"].Avg.Min, 1, 869.1},
		{"register avg max", ep["auth_register"].Avg.Max, 1, 883.9},
		{"register avg mean", ep["auth_register"].Avg.Mean, 1, 875.6},
		{"register median min", ep["auth_register"].Median.Min, 1, 857.0},
		{"register median max", ep["auth_register"].Median.Max, 1, 860.1},
		{"register p95 min", ep["auth_register"].P95.Min, 1, 992.0},
		{"register p95 max", ep["auth_register"].P95.Max, 0, 1020},
		{"upload avg min", ep["document_upload"].Avg.Min, 2, 49.30},
		{"upload avg max", ep["document_upload"].Avg.Max, 2, 52.63},
		{"upload avg mean", ep["document_upload"].Avg.Mean, 2, 50.81},
		{"upload median min", ep["document_upload"].Median.Min, 2, 44.94},
		{"upload median max", ep["document_upload"].Median.Max, 2, 47.14},
		{"upload p95 min", ep["document_upload"].P95.Min, 2, 74.02},
		{"upload p95 max", ep["document_upload"].P95.Max, 2, 83.13},
		{"upload p99 min", ep["document_upload"].P99.Min, 2, 108.08},
		{"upload p99 max", ep["document_upload"].P99.Max, 2, 137.01},
	}
	for _, tt := range tests {
		if got := r(tt.got, tt.decimals); got != tt.want {
			t.Errorf("%s = %v (rounded %v), document says %v", tt.name, tt.got, got, tt.want)
		}
	}
	// Every per-run maximum sits above the p99 band, as a run's slowest
	// request does, and none is an outlier among the others (2.1–2.8 s).
	for _, run := range env.Runs {
		if run.Max <= env.Latency.P99.Max || run.MaxOutlier {
			t.Errorf("%s: max %v, p99 band top %v, outlier %v", run.Source, run.Max, env.Latency.P99.Max, run.MaxOutlier)
		}
	}
	if !env.Saturation.BelowSaturation {
		t.Errorf("saturation = %+v, the reference baseline report finds the runs below saturation", env.Saturation)
	}
	w := env.Provenance.Workload
	if w.VUs != 50 || w.Executor != "constant-vus" || w.Duration != "6m0s" {
		t.Errorf("workload = %+v", w)
	}
}

// TestGeneratedUpToDate fails when internal/demo/envelope.yaml is stale:
// run `go generate` from the module root.
func TestGeneratedUpToDate(t *testing.T) {
	env, err := Envelope()
	if err != nil {
		t.Fatal(err)
	}
	want, err := envelope.Marshal(env, envelope.YAML)
	if err != nil {
		t.Fatal(err)
	}
	got, err := files.ReadFile("envelope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("internal/demo/envelope.yaml differs from the envelope of the embedded runs; run go generate")
	}
	if _, err := envelope.Parse("envelope.yaml", got); err != nil {
		t.Errorf("generated envelope does not validate: %v", err)
	}
}
