package otlp

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The exporter k6's OpenTelemetry output pushes with over gRPC (the OTel
// Go SDK's otlpmetricgrpc), with gzip and an authorization header:
// cumulative exports taken as deltas, the trend's buckets and sum whole.
func TestGRPCFromOTelSDKExporter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const auth = "Basic azY6c2VjcmV0" // k6:secret
	sink := newSumSink()
	var outcomes []string
	rc := NewReceiver(sink, Options{
		GRPCAuth:  func(a string) bool { return a == auth },
		OnRequest: func(o string, _ int, _ error) { outcomes = append(outcomes, o) },
	})
	_, _, addr := grpcReceiver(t, rc)
	exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(addr), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithCompressor("gzip"), otlpmetricgrpc.WithHeaders(map[string]string{"Authorization": auth}))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
	defer mp.Shutdown(context.Background()) //nolint:errcheck // test cleanup
	m := mp.Meter("k6")
	reqs, _ := m.Int64Counter("k6_http_reqs")
	dur, _ := m.Float64Histogram("k6_http_req_duration", metric.WithUnit("ms"))
	tags := metric.WithAttributes(attribute.String("name", "home"), attribute.String("testid", "sdk"))
	reqs.Add(ctx, 3, tags)
	for _, v := range []float64{12, 30, 250} {
		dur.Record(ctx, v, tags)
	}
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatalf("first export: %v", err)
	}
	reqs.Add(ctx, 2, tags)
	dur.Record(ctx, 8, tags)
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatalf("second export: %v", err)
	}
	if got := sink.counters["http_reqs"]; got != 5 {
		t.Errorf("http_reqs = %v, want 5 (3, then 2 more in a cumulative export)", got)
	}
	if n, sum := sink.hcount["http_req_duration"], sink.hsum["http_req_duration"]; n != 4 || sum != 300 {
		t.Errorf("http_req_duration: %d samples summing to %v, want 4 and 300", n, sum)
	}
	if len(outcomes) != 2 || outcomes[0] != OutcomeOK || outcomes[1] != OutcomeOK {
		t.Errorf("outcomes %v, want two ok", outcomes)
	}
}
