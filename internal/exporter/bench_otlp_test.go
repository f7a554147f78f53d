package exporter

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// capturePoints counts the data points of export request bodies.
func capturePoints(b *testing.B, bodies [][]byte) int {
	b.Helper()
	n := 0
	for _, body := range bodies {
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			b.Fatal(err)
		}
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					switch d := m.GetData().(type) {
					case *metricpb.Metric_Sum:
						n += len(d.Sum.GetDataPoints())
					case *metricpb.Metric_Gauge:
						n += len(d.Gauge.GetDataPoints())
					case *metricpb.Metric_Histogram:
						n += len(d.Histogram.GetDataPoints())
					case *metricpb.Metric_ExponentialHistogram:
						n += len(d.ExponentialHistogram.GetDataPoints())
					}
				}
			}
		}
	}
	return n
}

// BenchmarkOTLPIngest posts each real capture's export requests, in
// order, over OTLP/HTTP into a new exporter per iteration, and reports
// the data points ingested per CPU-second of the whole process
// (decoding, cumulative state, store), the exporter's creation left out.
func BenchmarkOTLPIngest(b *testing.B) {
	for _, c := range []struct{ name, capture string }{{"grpc-exponential", grpcCapture}, {"http-explicit", httpCapture}} {
		b.Run(c.name, func(b *testing.B) {
			bodies := captureBodies(b, c.capture)
			perRun := capturePoints(b, bodies)
			var cpu time.Duration
			runs := 0
			for b.Loop() {
				s, err := New(Config{DisableExporterMetrics: true})
				if err != nil {
					b.Fatal(err)
				}
				h := s.Handler()
				start := cpuTime()
				for _, body := range bodies {
					req := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/x-protobuf")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("status %d", rec.Code)
					}
				}
				cpu += cpuTime() - start
				runs++
			}
			b.ReportMetric(float64(perRun*runs)/cpu.Seconds(), "points/cpu-s")
		})
	}
}
