package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
)

// sumSink totals what the receiver hands over, by metric name.
type sumSink struct {
	types    map[string]k6.MetricType
	counters map[string]float64
	gauges   map[string]float64
	zero     map[string]uint64
	nonzero  map[string]uint64
	hcount   map[string]uint64
	hsum     map[string]float64
	points   int
	refused  []string // reasons, once per refused point
}

func newSumSink() *sumSink {
	return &sumSink{types: map[string]k6.MetricType{}, counters: map[string]float64{}, gauges: map[string]float64{},
		zero: map[string]uint64{}, nonzero: map[string]uint64{}, hcount: map[string]uint64{}, hsum: map[string]float64{}}
}

func (s *sumSink) Define(name string, typ k6.MetricType, _ k6.ValueType) error {
	if t, ok := s.types[name]; ok && t != typ {
		return fmt.Errorf("type %s, not %s", t, typ)
	}
	s.types[name] = typ
	return nil
}
func (s *sumSink) AddCounter(name string, _ map[string]string, d float64) error {
	s.counters[name] += d
	return nil
}
func (s *sumSink) SetGauge(name string, _ map[string]string, v float64) error {
	s.gauges[name] = v
	return nil
}
func (s *sumSink) AddRate(name string, _ map[string]string, z, nz uint64) error {
	s.zero[name] += z
	s.nonzero[name] += nz
	return nil
}
func (s *sumSink) AddBuckets(name string, _ map[string]string, _ []float64, counts []uint64, sum float64) error {
	for _, c := range counts {
		s.hcount[name] += c
	}
	s.hsum[name] += sum
	return nil
}
func (s *sumSink) Ingested(n int, _ int64) { s.points += n }
func (s *sumSink) Refuse(r *Refusal, n int) {
	for range n {
		s.refused = append(s.refused, r.Reason)
	}
}

// count is how many points were refused for reason.
func (s *sumSink) count(reason string) int {
	n := 0
	for _, r := range s.refused {
		if r == reason {
			n++
		}
	}
	return n
}

func post(t *testing.T, h http.Handler, ctype, enc string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// The five bodies k6 v2.2.0 sent during one run are cumulative: the totals
// after the last one equal the run's end-of-test summary, and replaying a
// body (a retry) adds nothing.
func TestCumulativeExportsMatchSummary(t *testing.T) {
	sink := newSumSink()
	rc := NewReceiver(sink, Options{Prefix: "k6_"})
	for i := 1; i <= 5; i++ {
		body, err := os.ReadFile(fixtures.Path(t, fmt.Sprintf("k6/baseline-mix-v2.2.0/otlp-sample-otlp/otlp-%03d.bin", i)))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second post is a retry of the same cumulative state
			if rec := post(t, rc, "application/x-protobuf", "", body); rec.Code != http.StatusOK {
				t.Fatalf("otlp-%03d: status %d: %s", i, rec.Code, rec.Body)
			}
		}
	}
	var raw struct {
		Metrics map[string]map[string]any `json:"metrics"`
	}
	b, _ := os.ReadFile(fixtures.Path(t, "k6/baseline-mix-v2.2.0/otlp-sample.summary.json"))
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	sum := struct{ Metrics map[string]map[string]float64 }{map[string]map[string]float64{}}
	for name, vals := range raw.Metrics {
		sum.Metrics[name] = map[string]float64{}
		for k, v := range vals {
			if f, ok := v.(float64); ok {
				sum.Metrics[name][k] = f
			}
		}
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"http_reqs", sink.counters["http_reqs"], sum.Metrics["http_reqs"]["count"]},
		{"iterations", sink.counters["iterations"], sum.Metrics["iterations"]["count"]},
		{"checks passes", float64(sink.nonzero["checks"]), sum.Metrics["checks"]["passes"]},
		{"checks fails", float64(sink.zero["checks"]), sum.Metrics["checks"]["fails"]},
		{"http_req_failed fails", float64(sink.zero["http_req_failed"]), sum.Metrics["http_req_failed"]["fails"]},
		{"http_req_duration count", float64(sink.hcount["http_req_duration"]), sum.Metrics["http_reqs"]["count"]},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	// The trend sum is exact too: avg * count from the summary.
	wantSum := sum.Metrics["http_req_duration"]["avg"] * sum.Metrics["http_reqs"]["count"]
	if d := sink.hsum["http_req_duration"] - wantSum; d > 1e-6*wantSum || d < -1e-6*wantSum {
		t.Errorf("http_req_duration sum: got %v, want %v", sink.hsum["http_req_duration"], wantSum)
	}
	if sink.types["http_req_failed"] != k6.Rate || sink.types["http_req_duration"] != k6.Trend || sink.types["vus"] != k6.Gauge {
		t.Errorf("types: %v", sink.types)
	}
}

// JSON bodies (protojson, as the runE capture is rendered) decode the same.
func TestJSONBody(t *testing.T) {
	sink := newSumSink()
	rc := NewReceiver(sink, Options{})
	for i := 1; i <= 3; i++ {
		body, err := os.ReadFile(fmt.Sprintf("testdata/otlp-export-%03d.json", i))
		if err != nil {
			t.Fatal(err)
		}
		rec := post(t, rc, "application/json", "", body)
		if rec.Code != http.StatusOK {
			t.Fatalf("%d: status %d: %s", i, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("response content type %q", ct)
		}
	}
	if sink.counters["http_reqs"] == 0 || sink.hcount["http_req_duration"] == 0 {
		t.Fatalf("nothing ingested: %+v", sink.counters)
	}
	// Every request has one duration sample.
	if float64(sink.hcount["http_req_duration"]) != sink.counters["http_reqs"] {
		t.Errorf("durations %d != requests %v", sink.hcount["http_req_duration"], sink.counters["http_reqs"])
	}
}

func TestBadRequests(t *testing.T) {
	body, err := os.ReadFile(fixtures.Path(t, "k6/baseline-mix-v2.2.0/otlp-sample-otlp/otlp-001.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(body) // in memory, cannot fail
	_ = zw.Close()        // in memory, cannot fail
	bomb := bytes.Repeat([]byte{0}, 4096)
	var gzBomb bytes.Buffer
	zw = gzip.NewWriter(&gzBomb)
	_, _ = zw.Write(bomb) // in memory, cannot fail
	_ = zw.Close()        // in memory, cannot fail
	for _, c := range []struct {
		name, ctype, enc string
		body             []byte
		max              int64
		want             int
		outcome          string
	}{
		{"protobuf", "application/x-protobuf", "", body, 0, 200, OutcomeOK},
		{"gzip protobuf", "application/x-protobuf", "gzip", gz.Bytes(), 0, 200, OutcomeOK},
		{"too large", "application/x-protobuf", "", body, 1000, 413, OutcomeTooLarge},
		{"gzip bomb", "application/x-protobuf", "gzip", gzBomb.Bytes(), 1000, 413, OutcomeTooLarge},
		{"content type", "text/plain", "", body, 0, 415, OutcomeUnsupportedMedia},
		{"no content type", "", "", body, 0, 415, OutcomeUnsupportedMedia},
		{"bad protobuf", "application/x-protobuf", "", []byte("\xff\xff\xff not protobuf"), 0, 400, OutcomeBadRequest},
		{"bad json", "application/json", "", []byte(`{"resourceMetrics": [`), 0, 400, OutcomeBadRequest},
		{"bad gzip", "application/x-protobuf", "gzip", []byte("not gzip"), 0, 400, OutcomeBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			var outcome string
			rc := NewReceiver(newSumSink(), Options{MaxBody: c.max, OnRequest: func(o string, _ int, _ error) { outcome = o }})
			rec := post(t, rc, c.ctype, c.enc, c.body)
			if rec.Code != c.want || outcome != c.outcome {
				t.Errorf("status %d outcome %q, want %d %q (%s)", rec.Code, outcome, c.want, c.outcome, strings.TrimSpace(rec.Body.String()))
			}
		})
	}
	rc := NewReceiver(newSumSink(), Options{})
	rec := httptest.NewRecorder()
	rc.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/metrics", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d", rec.Code)
	}
}

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func sumReq(start uint64, v float64, attrs ...*commonpb.KeyValue) *colmetricpb.ExportMetricsServiceRequest {
	dp := &metricpb.NumberDataPoint{Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: start + 1,
		Value: &metricpb.NumberDataPoint_AsDouble{AsDouble: v}}
	m := &metricpb.Metric{Name: "k6_http_reqs", Data: &metricpb.Metric_Sum{Sum: &metricpb.Sum{IsMonotonic: true,
		AggregationTemporality: metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
		DataPoints:             []*metricpb.NumberDataPoint{dp}}}}
	sm := &metricpb.ScopeMetrics{Metrics: []*metricpb.Metric{m}}
	return &colmetricpb.ExportMetricsServiceRequest{ResourceMetrics: []*metricpb.ResourceMetrics{{ScopeMetrics: []*metricpb.ScopeMetrics{sm}}}}
}

// A restarted producer (new start time) starts from zero again; several
// instances (distinct attributes) add; a lower value with the same start
// time is a late export and adds nothing (only a new start time resets).
func TestCumulativeResets(t *testing.T) {
	sink := newSumSink()
	rc := NewReceiver(sink, Options{})
	steps := []struct {
		req  *colmetricpb.ExportMetricsServiceRequest
		want float64
	}{
		{sumReq(100, 10, kv("instance", "a")), 10},
		{sumReq(100, 25, kv("instance", "a")), 25},
		{sumReq(100, 5, kv("instance", "b")), 30},
		{sumReq(200, 4, kv("instance", "a")), 34}, // restart of a
		{sumReq(200, 3, kv("instance", "a")), 34}, // went down, same start: late
		{sumReq(200, 4, kv("instance", "a")), 34}, // duplicate
		{sumReq(200, 6, kv("instance", "a")), 36},
	}
	for i, s := range steps {
		b, _ := proto.Marshal(s.req)
		if rec := post(t, rc, "application/x-protobuf", "", b); rec.Code != 200 {
			t.Fatal(rec.Code)
		}
		if got := sink.counters["http_reqs"]; got != s.want {
			t.Errorf("step %d: total %v, want %v", i, got, s.want)
		}
	}
	if late := sink.count("late_point"); late != 1 || len(sink.refused) != 1 {
		t.Errorf("%d late points counted (refusals %v), want 1", late, sink.refused)
	}
}

// A metric k6 cannot produce is rejected per data point with a partial
// success, and the request still succeeds.
func TestPartialSuccess(t *testing.T) {
	req := sumReq(1, 1)
	req.ResourceMetrics[0].ScopeMetrics[0].Metrics = append(req.ResourceMetrics[0].ScopeMetrics[0].Metrics,
		&metricpb.Metric{Name: "k6_summary", Data: &metricpb.Metric_Summary{Summary: &metricpb.Summary{}}})
	b, _ := proto.Marshal(req)
	sink := newSumSink()
	rc := NewReceiver(sink, Options{})
	rec := post(t, rc, "application/x-protobuf", "", b)
	bad := sink.refused
	var resp colmetricpb.ExportMetricsServiceResponse
	if err := proto.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 200 || resp.GetPartialSuccess().GetRejectedDataPoints() != 1 || len(bad) != 1 || bad[0] != "unsupported_type" {
		t.Errorf("status %d, partial %v, bad %v", rec.Code, resp.GetPartialSuccess(), bad)
	}
}

// OTLP/gRPC feeds the same receiver: the five k6 bodies sent as gRPC
// requests give the run's request count.
func TestGRPC(t *testing.T) {
	sink := newSumSink()
	rc := NewReceiver(sink, Options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := rc.GRPCServer(nil)
	go func() { _ = gs.Serve(l) }() // returns when Close runs; a failed start fails the exports below
	defer gs.Close()                //nolint:errcheck // test cleanup
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() //nolint:errcheck // test cleanup
	client := colmetricpb.NewMetricsServiceClient(conn)
	for i := 1; i <= 5; i++ {
		body, err := os.ReadFile(fixtures.Path(t, fmt.Sprintf("k6/baseline-mix-v2.2.0/otlp-sample-otlp/otlp-%03d.bin", i)))
		if err != nil {
			t.Fatal(err)
		}
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Export(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if got := sink.counters["http_reqs"]; got != 1146 {
		t.Errorf("http_reqs = %v, want 1146", got)
	}
}

// Cumulative histogram state is bounded in buckets, not only in streams:
// wide exponential histograms past the budget are dropped and counted.
func TestStreamBucketBudget(t *testing.T) {
	sink := newSumSink()
	rc := NewReceiver(sink, Options{})
	counts := make([]uint64, MaxExponentialBuckets)
	for i := range counts {
		counts[i] = 1
	}
	const streams = 800
	rejected := 0
	for batch := range 4 {
		var dps []*metricpb.ExponentialHistogramDataPoint
		for i := range streams / 4 {
			dps = append(dps, &metricpb.ExponentialHistogramDataPoint{Attributes: []*commonpb.KeyValue{kv("name", fmt.Sprint(batch, "-", i))},
				StartTimeUnixNano: 1, TimeUnixNano: 2, Count: uint64(len(counts)), Scale: 4,
				Positive: &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: -2000, BucketCounts: counts}})
		}
		req := &colmetricpb.ExportMetricsServiceRequest{ResourceMetrics: []*metricpb.ResourceMetrics{{ScopeMetrics: []*metricpb.ScopeMetrics{{Metrics: []*metricpb.Metric{{
			Name: "k6_http_req_duration", Unit: "ms", Data: &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{
				AggregationTemporality: metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, DataPoints: dps}}}}}}}}}
		_, r, _ := rc.Consume(req.GetResourceMetrics())
		rejected += r
	}
	perStream := len(counts) // one dense count per bucket
	drops := sink.count("streams")
	if rc.cost > StreamBucketBudget {
		t.Errorf("streams hold %d buckets, budget %d", rc.cost, StreamBucketBudget)
	}
	if want := streams - StreamBucketBudget/perStream; rejected != want || drops != want {
		t.Errorf("rejected %d, drops %d, want %d", rejected, drops, want)
	}
	rc.Expire(time.Now().Add(time.Hour))
	if rc.cost != 0 || len(rc.streams) != 0 || len(rc.idents) != 0 {
		t.Errorf("after expiry: cost %d, %d streams, %d identities", rc.cost, len(rc.streams), len(rc.idents))
	}
}
