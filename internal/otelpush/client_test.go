package otelpush

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

func TestClientEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		insecure bool
		want     string // "" = refused
	}{
		{"collector:4318", false, "https://collector:4318/v1/metrics"},
		{"collector:4318", true, "http://collector:4318/v1/metrics"},
		{"http://collector:4318", false, "http://collector:4318/v1/metrics"},
		{"https://collector/otlp/v1/metrics", true, "https://collector/otlp/v1/metrics"},
		{"ftp://collector", false, ""},
		{"http://", false, ""},
	} {
		c, err := newClient(tc.endpoint, tc.insecure)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: accepted as %s", tc.endpoint, c.url)
		case tc.want != "" && (err != nil || c.url != tc.want):
			t.Errorf("%s insecure=%v: %v %v, want %s", tc.endpoint, tc.insecure, c, err, tc.want)
		}
	}
}

// Every kind the client sends decodes as the OTLP request a collector
// reads, with its values, attributes and times.
func TestEncodeRequest(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	attrs := attribute.NewSet(attribute.String("name", "home"), attribute.Int("vus", 50), attribute.Bool("ok", true), attribute.Float64("f", 0.5))
	rm := &metricdata.ResourceMetrics{
		Resource: resource.NewSchemaless(attribute.String("service.name", "envelope-exporter")),
		ScopeMetrics: []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: "s"}, Metrics: []metricdata.Metrics{
			{Name: "c", Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{{Attributes: attrs, StartTime: now, Time: now.Add(time.Second), Value: 7}}}},
			{Name: "g", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Time: now, Value: 2.5}}}},
			{Name: "h", Data: metricdata.Histogram[float64]{Temporality: metricdata.DeltaTemporality, DataPoints: []metricdata.HistogramDataPoint[float64]{{
				Time: now, Count: 3, Sum: 6, Bounds: []float64{1, 5}, BucketCounts: []uint64{1, 1, 1}, Min: metricdata.NewExtrema(0.5)}}}},
		}}},
	}
	b, err := encodeRequest(rm)
	if err != nil {
		t.Fatal(err)
	}
	req := &colmetricpb.ExportMetricsServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		t.Fatal(err)
	}
	r := req.GetResourceMetrics()[0]
	if kv := r.GetResource().GetAttributes(); len(kv) != 1 || kv[0].GetValue().GetStringValue() != "envelope-exporter" {
		t.Errorf("resource %v", kv)
	}
	ms := r.GetScopeMetrics()[0].GetMetrics()
	c := ms[0].GetSum()
	if dp := c.GetDataPoints()[0]; dp.GetAsInt() != 7 || !c.GetIsMonotonic() || dp.GetStartTimeUnixNano() != uint64(now.UnixNano()) || len(dp.GetAttributes()) != 4 {
		t.Errorf("sum %v", c)
	}
	if g := ms[1].GetGauge().GetDataPoints()[0]; g.GetAsDouble() != 2.5 || g.GetStartTimeUnixNano() != 0 {
		t.Errorf("gauge %v", g)
	}
	h := ms[2].GetHistogram()
	if dp := h.GetDataPoints()[0]; h.GetAggregationTemporality() != 1 || dp.GetCount() != 3 || len(dp.GetBucketCounts()) != 3 || dp.GetMin() != 0.5 || dp.Max != nil {
		t.Errorf("histogram %v", h)
	}
	rm.ScopeMetrics[0].Metrics = append(rm.ScopeMetrics[0].Metrics, metricdata.Metrics{Name: "s", Data: metricdata.Summary{}})
	if _, err := encodeRequest(rm); err == nil || !strings.Contains(err.Error(), "metric s") {
		t.Errorf("a summary: %v, want an error naming it", err)
	}
}

// A refused push fails with the collector's reason: an error status, or
// a partial success naming the points it refused.
func TestClientExportOutcomes(t *testing.T) {
	var reply func(w http.ResponseWriter)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		reply(w)
	}))
	defer srv.Close()
	c, err := newClient(srv.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	sms, _ := (&Producer{G: fixture()}).Produce(context.Background())
	rm := &metricdata.ResourceMetrics{ScopeMetrics: sms}
	for _, tc := range []struct {
		name  string
		reply func(w http.ResponseWriter)
		want  string // "" = success
	}{
		{"ok", func(w http.ResponseWriter) {
			out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
			_, _ = w.Write(out)
		}, ""},
		{"partial", func(w http.ResponseWriter) {
			out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{PartialSuccess: &colmetricpb.ExportMetricsPartialSuccess{RejectedDataPoints: 2, ErrorMessage: "too old"}})
			_, _ = w.Write(out)
		}, "refused 2 data points: too old"},
		{"unavailable", func(w http.ResponseWriter) { http.Error(w, "busy", http.StatusServiceUnavailable) }, "503 Service Unavailable: busy"},
		{"empty 200", func(http.ResponseWriter) {}, ""},
	} {
		reply = tc.reply
		err := c.Export(context.Background(), rm)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
