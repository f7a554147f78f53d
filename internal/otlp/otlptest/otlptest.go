// Package otlptest holds what tests of the OTLP receiver and of the
// exporter that serves it share: who is receiving, and a capture's
// metrics read by hand.
package otlptest

import (
	"bytes"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// Receiving counts the goroutines reading an OTLP body: the requests
// being received.
func Receiving(tb testing.TB) int {
	tb.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		tb.Fatal(err)
	}
	total := 0
	_, records, _ := strings.Cut(b.String(), "\n") // past the header line
	for _, rec := range strings.Split(records, "\n\n") {
		if !strings.Contains(rec, "otlp.(*Receiver).readBody") {
			continue
		}
		count, _, _ := strings.Cut(rec, " @")
		k, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil {
			tb.Fatalf("goroutine profile record %.80q: %v", rec, err)
		}
		total += k
	}
	return total
}

// EachMetric calls f with every metric of the export requests bodies
// (OTLP protobuf), in order: for a test that reads a capture by hand.
func EachMetric(tb testing.TB, bodies [][]byte, f func(*metricpb.Metric)) {
	tb.Helper()
	for _, b := range bodies {
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			tb.Fatal(err)
		}
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					f(m)
				}
			}
		}
	}
}
