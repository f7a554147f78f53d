package envelope

import (
	"slices"
	"testing"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/k6"
)

func TestBucketEdges(t *testing.T) {
	env := &Envelope{
		Latency:   Latency{Median: Band{Min: 5, Max: 6.5, N: 3}, P95: Band{Min: 357.7, Max: 405.3, N: 3}, P99: Band{Min: 900, Max: 937.2, N: 3}},
		Tolerance: figures.Tolerance{LatencyRise: 0.1},
		Endpoints: map[string]Endpoint{
			"actor":  {Metric: "actor_get", P95: Band{Min: 12, Max: 15, N: 3}},
			"login":  {Tag: "name", Value: "login", P95: Band{Min: 100, Max: 120, N: 3}},
			"no-tag": {Tag: "name", P95: Band{Min: 1, Max: 2, N: 3}}, // names no trend: no edges anywhere
			"tiny":   {Metric: "tiny", P95: Band{Min: 0, Max: 0.0001, N: 3}},
		},
	}
	for _, c := range []struct {
		trend string
		want  []float64
	}{
		{k6.HTTPReqDuration, []float64{0.005, 0.0065, 0.00715, 0.1, 0.12, 0.132, 0.3577, 0.4053, 0.44583, 0.9, 0.9372, 1.03092}},
		{"actor_get", []float64{0.012, 0.015, 0.0165}},
		// 0.0001 ms rounds to 0 s: no bucket at 0, the threshold at 1 µs.
		{"tiny", []float64{1e-6}},
		{"iteration_duration", nil},
	} {
		if got := env.BucketEdges(c.trend); !slices.Equal(got, c.want) {
			t.Errorf("BucketEdges(%s) = %v, want %v", c.trend, got, c.want)
		}
	}
	if got := Seconds(405.3); got != 0.4053 {
		t.Errorf("Seconds(405.3) = %v", got)
	}
	for _, b := range env.LatencyBands() {
		if b.Endpoint == "no-tag" {
			t.Errorf("band of an endpoint without a trend listed: %+v", b)
		}
	}
	if got := (Endpoint{Tag: "name", Value: "x"}).Trend(); got != k6.HTTPReqDuration {
		t.Errorf("tag endpoint trend %q", got)
	}
}
