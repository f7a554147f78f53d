package main

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

func TestHeadlineSingleRunHasNoFakeRange(t *testing.T) {
	env := &envelope.Envelope{
		Throughput: envelope.Spread{N: 1, Mean: 55.97, Min: 55.97, Max: 55.97},
		Latency:    envelope.Latency{P95: envelope.Band{Min: 357.7, Max: 357.7, N: 1}, P99: envelope.Band{Min: 931.4, Max: 931.4, N: 1}},
	}
	got := headline(env)
	for _, bad := range []string{"55.97–55.97", "357.7–357.7", "CV"} {
		if strings.Contains(got, bad) {
			t.Errorf("single-run headline has %q:\n%s", bad, got)
		}
	}
	env.Throughput = envelope.Spread{N: 5, Mean: 56.1, Min: 55.97, Max: 56.28, CV: 0.0024}
	if got := headline(env); !strings.Contains(got, "55.97–56.28 req/s across 5 runs, CV 0.24%") {
		t.Errorf("five-run headline:\n%s", got)
	}
}

// The headline marks an aggregate percentile a run has too few requests
// to estimate, and only that one.
func TestHeadlineMarksUnestimated(t *testing.T) {
	env := &envelope.Envelope{
		Throughput: envelope.Spread{N: 2, Mean: 2.5, Min: 2.4, Max: 2.6},
		Latency:    envelope.Latency{P95: envelope.Band{Min: 350, Max: 360, N: 2}, P99: envelope.Band{Min: 900, Max: 940, N: 2}},
		Runs:       []envelope.Run{{Run: figures.Run{Requests: 900}}, {Run: figures.Run{Requests: 950}}},
	}
	got := headline(env)
	if !strings.Contains(got, "p95 350.0–360.0 ms, p99 900.0–940.0 ms (not estimable: 900–950 requests a run, p99 needs 1,000)") {
		t.Errorf("headline:\n%s", got)
	}
	env.Runs = nil
	if got := headline(env); strings.Contains(got, "estimable") {
		t.Errorf("headline without runs:\n%s", got)
	}
}
