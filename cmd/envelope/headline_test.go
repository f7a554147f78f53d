package main

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
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
