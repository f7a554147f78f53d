package exporter

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// eachPoint calls f with the start and point times of every data point
// of an export request.
func eachPoint(req *colmetricpb.ExportMetricsServiceRequest, f func(start, t *uint64)) {
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				switch d := m.GetData().(type) {
				case *metricpb.Metric_Sum:
					for _, dp := range d.Sum.GetDataPoints() {
						f(&dp.StartTimeUnixNano, &dp.TimeUnixNano)
					}
				case *metricpb.Metric_Gauge:
					for _, dp := range d.Gauge.GetDataPoints() {
						f(&dp.StartTimeUnixNano, &dp.TimeUnixNano)
					}
				case *metricpb.Metric_Histogram:
					for _, dp := range d.Histogram.GetDataPoints() {
						f(&dp.StartTimeUnixNano, &dp.TimeUnixNano)
					}
				case *metricpb.Metric_ExponentialHistogram:
					for _, dp := range d.ExponentialHistogram.GetDataPoints() {
						f(&dp.StartTimeUnixNano, &dp.TimeUnixNano)
					}
				}
			}
		}
	}
}

// shifted is a capture as another k6 instance with the same tags would
// send it: every start and point time moved by d nanoseconds.
func shifted(t *testing.T, bodies [][]byte, d uint64) [][]byte {
	t.Helper()
	out := make([][]byte, len(bodies))
	for i, b := range bodies {
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			t.Fatal(err)
		}
		eachPoint(req, func(start, pt *uint64) {
			if *start != 0 {
				*start += d
			}
			*pt += d
		})
		var err error
		if out[i], err = proto.Marshal(req); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// span is the time from the first start to the last point of a capture.
func span(t *testing.T, bodies [][]byte) uint64 {
	t.Helper()
	first, last := uint64(math.MaxUint64), uint64(0)
	for _, b := range bodies {
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			t.Fatal(err)
		}
		eachPoint(req, func(start, pt *uint64) {
			if *start != 0 {
				first = min(first, *start)
			}
			last = max(last, *pt)
		})
	}
	return last - first
}

// summed reads a summary's metrics as k instances of the same run.
func summed(t *testing.T, path string, k float64) map[string]map[string]float64 {
	t.Helper()
	m := summaryMetrics(t, path)
	for _, fields := range m {
		for f, v := range fields {
			if f == "count" || f == "passes" || f == "fails" {
				fields[f] = k * v
			}
		}
	}
	return m
}

// Two k6 instances with the same tags send the same resource, so only
// their start times tell their streams apart: interleaved, each keeps its
// own cumulative state and the totals are the sum of both runs. A
// restarted instance whose pre-restart export is retried after the
// restart: the retry adds nothing and is counted.
func TestInstancesAndRestarts(t *testing.T) {
	for _, c := range []struct{ capture, summary string }{{httpCapture, httpSummary}, {grpcCapture, grpcSummary}} {
		a := captureBodies(t, c.capture)
		n := len(a)
		t.Run(c.capture[len("k6/baseline-mix-v2.2.0/"):][:9]+"/instances", func(t *testing.T) {
			// B started 3 s after A.
			b := shifted(t, a, 3e9)
			bodies := append(append([][]byte{}, a...), b...)
			var order []int
			for i := range n {
				order = append(order, i, n+i)
			}
			s := newReplayServer(t)
			postCapture(t, s, bodies, order)
			checkSummaryAgainst(t, s, summed(t, fixtures.Path(t, c.summary), 2))
			if got := testutil.ToFloat64(s.starts); got == 0 {
				t.Error("no new start time counted")
			}
			if got := badCount(s, SourceOTLP, "before_restart"); got != 0 {
				t.Errorf("%v points refused as before a restart", got)
			}
		})
		t.Run(c.capture[len("k6/baseline-mix-v2.2.0/"):][:9]+"/restart", func(t *testing.T) {
			// B is A restarted after its run; A's call 3 is retried after
			// B's first call.
			b := shifted(t, a, span(t, a)+1e9)
			bodies := append(append([][]byte{}, a...), b...)
			var order []int
			for i := range n {
				order = append(order, i)
			}
			order = append(order, n, 2, n+1)
			for i := 2; i < n; i++ {
				order = append(order, n+i)
			}
			s := newReplayServer(t)
			postCapture(t, s, bodies, order)
			checkSummaryAgainst(t, s, summed(t, fixtures.Path(t, c.summary), 2))
			if got := badCount(s, SourceOTLP, "before_restart"); got == 0 {
				t.Error("the late retry's points were not counted as before_restart")
			}
		})
	}
}

// Exports arriving in reverse order: the newest is applied whole, every
// older cumulative point is late (counted, reported as rejected) and no
// older gauge value replaces the newest (k6_vus stays at the last
// export's 10, not the first's 50).
func TestExportsReversed(t *testing.T) {
	bodies := captureBodies(t, httpCapture)
	s := newReplayServer(t)
	for i := len(bodies) - 1; i >= 0; i-- {
		code, resp := postOTLP(t, s.Handler(), mustRequest(t, bodies[i]))
		if code != 200 {
			t.Fatalf("call %d: status %d", i+1, code)
		}
		rejected := resp.GetPartialSuccess().GetRejectedDataPoints()
		if i == len(bodies)-1 && rejected != 0 {
			t.Errorf("newest call: %d points rejected", rejected)
		}
		if i < len(bodies)-1 && rejected == 0 {
			t.Errorf("call %d, older than one applied: no point rejected", i+1)
		}
	}
	checkSummary(t, s, fixtures.Path(t, httpSummary))
	vus := gatherFamily(t, s, "k6_vus")
	if len(vus.GetMetric()) != 1 || vus.GetMetric()[0].GetGauge().GetValue() != 10 {
		t.Errorf("k6_vus = %v, want the newest export's 10", vus.GetMetric())
	}
	if got := badCount(s, SourceOTLP, "late_point"); got == 0 {
		t.Error("no late point counted")
	}
	if got := testutil.ToFloat64(s.otlpReqs.WithLabelValues("partial")); got != float64(len(bodies)-1) {
		t.Errorf("%v partial outcomes, want %d", got, len(bodies)-1)
	}
}

func mustRequest(t *testing.T, b []byte) *colmetricpb.ExportMetricsServiceRequest {
	t.Helper()
	req := &colmetricpb.ExportMetricsServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		t.Fatal(err)
	}
	return req
}
