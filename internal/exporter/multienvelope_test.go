package exporter

import (
	"slices"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
)

// Several envelopes: each one's gauges under its own envelope label, the
// classic buckets holding the band edges of all of them, and two
// envelopes of one name refused.
func TestSeveralEnvelopes(t *testing.T) {
	a := testEnvelope()
	b := testEnvelope()
	b.Name = "phase3-100vu"
	b.Latency.P95 = envelope.Band{Min: 700, Max: 800, N: 3}
	s, err := New(Config{Envelope: a, Envelopes: []*envelope.Envelope{b}, DisableExporterMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	mf := gatherFamily(t, s, "envelope_throughput_mean_requests_per_second")
	var names []string
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "envelope" {
				names = append(names, l.GetValue())
			}
		}
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "golden,phase3-100vu" {
		t.Errorf("envelope labels %v, want golden and phase3-100vu", names)
	}
	bounds := classicBuckets([]*envelope.Envelope{a, b}, "http_req_duration", k6.Time)
	for _, want := range []float64{envelope.Seconds(405.3 * 1.1), envelope.Seconds(800 * 1.1)} {
		if !slices.Contains(bounds, want) {
			t.Errorf("buckets %v lack the band edge %v", bounds, want)
		}
	}

	if _, err := New(Config{Envelope: a, Envelopes: []*envelope.Envelope{testEnvelope()}}); err == nil || !strings.Contains(err.Error(), `"golden"`) {
		t.Errorf("two envelopes named golden: err = %v, want one naming it", err)
	}
}
