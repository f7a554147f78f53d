package otelpush

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func p[T any](v T) *T { return &v }

// A gatherer with one counter and one native histogram holding samples
// at 1 s (three) and 4 s (one), schema 7: Prometheus buckets 0 and 256.
func fixture() prometheus.Gatherer {
	created := timestamppb.New(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return []*dto.MetricFamily{
			{Name: p("k6_http_reqs_total"), Help: p("h"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{
				Label:   []*dto.LabelPair{{Name: p("name"), Value: p("home")}, {Name: p("group"), Value: p("")}},
				Counter: &dto.Counter{Value: p(4.0), CreatedTimestamp: created}}}},
			{Name: p("k6_http_req_duration_seconds"), Help: p("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{
				Histogram: &dto.Histogram{SampleCount: p(uint64(4)), SampleSum: p(7.0), Schema: p(int32(7)),
					ZeroThreshold: p(1e-39), ZeroCount: p(uint64(0)),
					PositiveSpan:  []*dto.BucketSpan{{Offset: p(int32(0)), Length: p(uint32(1))}, {Offset: p(int32(255)), Length: p(uint32(1))}},
					PositiveDelta: []int64{3, -2}, CreatedTimestamp: created}}}},
		}, nil
	})
}

func TestTranslate(t *testing.T) {
	sms, err := (&Producer{G: fixture()}).Produce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ms := sms[0].Metrics
	if len(ms) != 2 || ms[0].Name != "k6_http_reqs_total" || ms[1].Unit != "s" {
		t.Fatalf("metrics %+v", ms)
	}
	sum, ok := ms[0].Data.(metricdata.Sum[float64])
	if !ok || !sum.IsMonotonic || sum.Temporality != metricdata.CumulativeTemporality {
		t.Fatalf("counter data %T %+v", ms[0].Data, ms[0].Data)
	}
	dp := sum.DataPoints[0]
	// The empty group label is dropped, as Prometheus drops it; the created
	// timestamp is the start of the cumulative stream.
	if dp.Attributes.Len() != 1 || dp.Value != 4 || !dp.StartTime.Equal(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("counter point %+v", dp)
	}
}

// dense maps Prometheus bucket i to OTel bucket i-1, gaps filled with 0.
func TestDense(t *testing.T) {
	b := dense([]*dto.BucketSpan{{Offset: p(int32(0)), Length: p(uint32(1))}, {Offset: p(int32(2)), Length: p(uint32(1))}}, []int64{3, -2})
	if b.Offset != -1 || len(b.Counts) != 4 || b.Counts[0] != 3 || b.Counts[1] != 0 || b.Counts[2] != 0 || b.Counts[3] != 1 {
		t.Errorf("dense = %+v", b)
	}
	// OTel bucket -1 at scale 7 is (2^(-1/128), 1]: it holds 1.0, as
	// Prometheus bucket 0 does.
	base := math.Exp2(math.Exp2(-7))
	if lo := math.Pow(base, float64(b.Offset)); !(lo < 1 && 1 <= math.Pow(base, float64(b.Offset+1))) {
		t.Errorf("bucket %d does not hold 1.0", b.Offset)
	}
}

// Run pushes OTLP/HTTP protobuf to the endpoint; the request decodes and
// carries the series.
func TestRunPushes(t *testing.T) {
	got := make(chan *colmetricpb.ExportMetricsServiceRequest, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if r.URL.Path != "/v1/metrics" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad", 400)
			return
		}
		select {
		case got <- req:
		default:
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		_, _ = w.Write(out) // the client under test reports a short body
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, fixture(), Options{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Insecure: true, Interval: 50 * time.Millisecond})
	}()
	var req *colmetricpb.ExportMetricsServiceRequest
	select {
	case req = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("no push received")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var counter *metricpb.Metric
	var hist *metricpb.Metric
	for _, m := range req.GetResourceMetrics()[0].GetScopeMetrics()[0].GetMetrics() {
		switch m.GetName() {
		case "k6_http_reqs_total":
			counter = m
		case "k6_http_req_duration_seconds":
			hist = m
		}
	}
	if counter == nil || hist == nil {
		t.Fatalf("missing metrics in %v", req)
	}
	dp := counter.GetSum().GetDataPoints()[0]
	if dp.GetAsDouble() != 4 || len(dp.GetAttributes()) != 1 || dp.GetAttributes()[0].GetKey() != "name" || !counter.GetSum().GetIsMonotonic() {
		t.Errorf("counter point %v", dp)
	}
	hp := hist.GetExponentialHistogram().GetDataPoints()[0]
	if hp.GetCount() != 4 || hp.GetSum() != 7 || hp.GetScale() != 7 || hp.GetPositive().GetOffset() != -1 {
		t.Errorf("histogram point %v", hp)
	}
	if c := hp.GetPositive().GetBucketCounts(); len(c) != 257 || c[0] != 3 || c[256] != 1 {
		t.Errorf("bucket counts len %d", len(c))
	}
}
