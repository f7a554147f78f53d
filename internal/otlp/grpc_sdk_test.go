package otlp

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
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

// The OTel SDK's own exporters, gRPC and HTTP, with exponential
// histograms whose range grows by decades between exports, so that the
// SDK rescales them (as k6's does over a real run): the receiver applies
// exactly the samples recorded, every one in its bucket at the final
// scale, however often the scale changed.
func TestSDKExponentialRescales(t *testing.T) {
	for _, transport := range []string{"grpc", "http"} {
		t.Run(transport, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sink := &bucketSink{}
			rc := NewReceiver(sink, Options{})
			var exp sdkmetric.Exporter
			var err error
			if transport == "grpc" {
				_, _, addr := grpcReceiver(t, rc)
				exp, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(addr), otlpmetricgrpc.WithInsecure(), otlpmetricgrpc.WithCompressor("gzip"))
			} else {
				srv := httptest.NewServer(rc)
				defer srv.Close()
				exp, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(strings.TrimPrefix(srv.URL, "http://")), otlpmetrichttp.WithInsecure(),
					otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression))
			}
			if err != nil {
				t.Fatal(err)
			}
			// A manual reader beside the exporter's shows the scales the
			// SDK chose.
			manual := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(
				sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))),
				sdkmetric.WithReader(manual),
				sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram},
					sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}})))
			defer mp.Shutdown(context.Background()) //nolint:errcheck // test cleanup
			dur, _ := mp.Meter("k6").Float64Histogram("k6_http_req_duration", metric.WithUnit("ms"))
			tags := metric.WithAttributes(attribute.String("name", "home"), attribute.String("testid", "sdk"))
			var samples []float64
			var scales []int32
			// Each phase spreads over more decades: 10-11 ms, then up to
			// 1 s, then down to 10 µs and up to 60 s, with zeros.
			for phase, r := range [][2]float64{{10, 11}, {10, 1000}, {0.01, 60000}, {0.01, 60000}} {
				for i := range 200 {
					v := r[0] * math.Pow(r[1]/r[0], float64((i*37+phase*11)%200)/199)
					if phase > 1 && i%50 == 0 {
						v = 0
					}
					dur.Record(ctx, v, tags)
					samples = append(samples, v)
				}
				if err := mp.ForceFlush(ctx); err != nil {
					t.Fatalf("export %d: %v", phase+1, err)
				}
				var rm metricdata.ResourceMetrics
				if err := manual.Collect(ctx, &rm); err != nil {
					t.Fatal(err)
				}
				h := rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.ExponentialHistogram[float64])
				scales = append(scales, h.DataPoints[0].Scale)
			}
			if scales[0] <= scales[1] || scales[1] <= scales[2] {
				t.Fatalf("scales %v: the SDK did not rescale between exports", scales)
			}
			t.Logf("scales of the exports: %v", scales)
			last := scales[len(scales)-1]
			want, got := bucketsAt(samples, last), bucketsAt(sink.values, last, sink.counts...)
			if len(got) != len(want) {
				t.Errorf("scales %v: %d buckets applied, %d recorded", scales, len(got), len(want))
			}
			for k, n := range want {
				if got[k] != n {
					t.Errorf("scales %v: bucket %d at scale %d: %d applied, %d recorded", scales, k, last, got[k], n)
				}
			}
			var sum float64
			for _, v := range samples {
				sum += v
			}
			if math.Abs(sink.sum-sum) > 1e-9*sum {
				t.Errorf("sum %v, recorded %v", sink.sum, sum)
			}
		})
	}
}

// bucketsAt counts values (each counts[i] times, or once) by their
// positive bucket at scale; zeros under index MinInt32.
func bucketsAt(values []float64, scale int32, counts ...uint64) map[int32]uint64 {
	out := map[int32]uint64{}
	for i, v := range values {
		n := uint64(1)
		if counts != nil {
			n = counts[i]
		}
		if n == 0 {
			continue
		}
		k := int32(math.MinInt32)
		if v > 0 {
			// Bucket i holds (base^i, base^(i+1)].
			k = int32(math.Ceil(math.Log2(v)*math.Exp2(float64(scale)))) - 1
		}
		out[k] += n
	}
	return out
}
