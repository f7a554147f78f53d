package exporter

// The hostile suite: each test sends one input an attacker or a
// long-lived deployment produces and asserts the bound that holds, the
// counter that records the drop and the error the client is told.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// hostileServer serves hostile input with the bounds exporter serve runs
// with (DefaultConfig), but for those cfg sets.
func hostileServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	d := DefaultConfig()
	for _, f := range []struct{ p, def *int }{
		{&cfg.SeriesLimit, &d.SeriesLimit}, {&cfg.MetricLimit, &d.MetricLimit}, {&cfg.MaxLabelValue, &d.MaxLabelValue},
		{&cfg.NativeMaxBuckets, &d.NativeMaxBuckets}, {&cfg.OTLPStreamLimit, &d.OTLPStreamLimit},
		{&cfg.MaxConnections, &d.MaxConnections}, {&cfg.MaxRequests, &d.MaxRequests},
	} {
		if *f.p == 0 {
			*f.p = *f.def
		}
	}
	for _, f := range []struct{ p, def *int64 }{{&cfg.NativeBucketBudget, &d.NativeBucketBudget}, {&cfg.OTLPMemoryBudget, &d.OTLPMemoryBudget}} {
		if *f.p == 0 {
			*f.p = *f.def
		}
	}
	if cfg.SeriesTTL == 0 {
		cfg.SeriesTTL = d.SeriesTTL
	}
	cfg.DisableExporterMetrics = true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func strAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// exportReq wraps metrics in one request with the given resource.
func exportReq(res []*commonpb.KeyValue, ms ...*metricpb.Metric) *colmetricpb.ExportMetricsServiceRequest {
	return &colmetricpb.ExportMetricsServiceRequest{ResourceMetrics: []*metricpb.ResourceMetrics{{
		Resource:     &resourcepb.Resource{Attributes: res},
		ScopeMetrics: []*metricpb.ScopeMetrics{{Metrics: ms}},
	}}}
}

func histMetric(temp metricpb.AggregationTemporality, dps ...*metricpb.HistogramDataPoint) *metricpb.Metric {
	return &metricpb.Metric{Name: "k6_http_req_duration", Unit: "ms", Data: &metricpb.Metric_Histogram{
		Histogram: &metricpb.Histogram{AggregationTemporality: temp, DataPoints: dps}}}
}

func sumMetric(name string, temp metricpb.AggregationTemporality, dps ...*metricpb.NumberDataPoint) *metricpb.Metric {
	return &metricpb.Metric{Name: name, Data: &metricpb.Metric_Sum{Sum: &metricpb.Sum{IsMonotonic: true,
		AggregationTemporality: temp, DataPoints: dps}}}
}

func dbl(v float64, start uint64, attrs ...*commonpb.KeyValue) *metricpb.NumberDataPoint {
	return &metricpb.NumberDataPoint{Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: start + 1,
		Value: &metricpb.NumberDataPoint_AsDouble{AsDouble: v}}
}

const (
	delta = metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	cumul = metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
)

// postOTLP posts req as protobuf and decodes the reply.
func postOTLP(t testing.TB, h http.Handler, req *colmetricpb.ExportMetricsServiceRequest) (int, *colmetricpb.ExportMetricsServiceResponse) {
	t.Helper()
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/x-protobuf")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	resp := &colmetricpb.ExportMetricsServiceResponse{}
	if rec.Code == http.StatusOK {
		if err := proto.Unmarshal(rec.Body.Bytes(), resp); err != nil {
			t.Fatalf("reply: %v", err)
		}
	}
	return rec.Code, resp
}

// scrapeText fetches /metrics as text and parses it as Prometheus would:
// the page must be valid UTF-8 and parse whole.
func scrapeText(t testing.TB, h http.Handler) map[string]*model.Sample {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	r.Header.Set("Accept", "text/plain; version=0.0.4")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	if !utf8.Valid(rec.Body.Bytes()) {
		t.Fatal("scrape page is not valid UTF-8")
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("scrape page does not parse: %v", err)
	}
	out := map[string]*model.Sample{}
	vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: 1}, mapValues(mfs)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range vec {
		out[s.Metric.String()] = s
	}
	return out
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func badCount(s *Server, src, reason string) float64 {
	return testutil.ToFloat64(s.bad.WithLabelValues(src, reason))
}

// Invalid UTF-8 in a tag value (NDJSON and OTLP) or in an OTLP metric
// name never reaches the page: values are repaired and counted, names
// refused; the page stays valid for every other series.
func TestHostileInvalidUTF8(t *testing.T) {
	s := hostileServer(t, Config{})
	h := s.Handler()
	n, err := s.replayReader("bad", strings.NewReader(
		"{\"metric\":\"http_reqs\",\"type\":\"Point\",\"data\":{\"time\":\"2026-11-30T08:51:04Z\",\"value\":1,\"tags\":{\"name\":\"bad\xff\",\"testid\":\"a\"}}}\n"+
			"{\"metric\":\"http_reqs\",\"type\":\"Point\",\"data\":{\"time\":\"2026-11-30T08:51:04Z\",\"value\":1,\"tags\":{\"name\":\"good\",\"testid\":\"a\"}}}\n"))
	if err != nil || n != 2 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	// OTLP protobuf and JSON decoding refuse invalid UTF-8 in strings:
	// the request gets 400 and adds nothing.
	body, _ := proto.Marshal(exportReq(nil, sumMetric("k6_http_reqs", delta, dbl(2, 1, strAttr("name", "otlpZ")))))
	body = bytes.Replace(body, []byte("otlpZ"), []byte("otlp\xc3"), 1)
	r := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/x-protobuf")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "UTF-8") {
		t.Errorf("OTLP body with invalid UTF-8: %d %q, want 400 naming UTF-8", rec.Code, rec.Body)
	}
	// A request built in memory (no decoding) still meets the check: the
	// tag value is repaired, the metric name refused.
	taken, rejected, msg := s.otlp.Consume(exportReq(nil,
		sumMetric("k6_http_reqs", delta, dbl(2, 1, strAttr("name", "otlp\xc3"))),
		sumMetric("k6_bad\xffname", delta, dbl(2, 1))).GetResourceMetrics())
	if taken != 1 || rejected != 1 || !strings.Contains(msg, "UTF-8") {
		t.Errorf("taken %d, rejected %d (%q); want 1, 1 naming UTF-8", taken, rejected, msg)
	}
	page := scrapeText(t, h)
	for _, want := range []string{"name=\"bad\uFFFD\"", "name=\"otlp\uFFFD\"", "name=\"good\""} {
		found := false
		for k := range page {
			found = found || strings.HasPrefix(k, "k6_http_reqs_total{") && strings.Contains(k, want)
		}
		if !found {
			t.Errorf("series with %s missing from the page", want)
		}
	}
	if got := badCount(s, SourceResults, "invalid_utf8"); got != 1 {
		t.Errorf("results invalid_utf8 = %v, want 1", got)
	}
	// A metric name that is not UTF-8 is refused (its HELP text would
	// carry it).
	s.DefineMetric(&k6.MetricDef{Name: "c\xfe", Type: k6.Counter, Contains: k6.Default})
	if got := badCount(s, SourceAPI, "invalid_utf8"); got != 1 || len(s.st.sortedFamilies()) != 1 {
		t.Errorf("api invalid_utf8 = %v with %d metrics, want 1 with 1", got, len(s.st.sortedFamilies()))
	}
	if got := badCount(s, SourceOTLP, "invalid_utf8"); got != 2 { // one attribute, one name
		t.Errorf("otlp invalid_utf8 = %v, want 2", got)
	}
}

// NaN and infinite figures, and points that would overflow a total, are
// refused per point with a partial success; the series stay finite.
func TestHostileNonFinite(t *testing.T) {
	s := hostileServer(t, Config{})
	h := s.Handler()
	nanSum := &metricpb.HistogramDataPoint{StartTimeUnixNano: 1, TimeUnixNano: 2, Count: 1, Sum: ptr(math.NaN()),
		ExplicitBounds: []float64{10}, BucketCounts: []uint64{1, 0}}
	infSum := proto.Clone(nanSum).(*metricpb.HistogramDataPoint)
	infSum.Sum = ptr(math.Inf(1))
	good := &metricpb.HistogramDataPoint{StartTimeUnixNano: 1, TimeUnixNano: 2, Count: 2, Sum: ptr(7.0),
		ExplicitBounds: []float64{10}, BucketCounts: []uint64{2, 0}}
	huge := &metricpb.HistogramDataPoint{StartTimeUnixNano: 1, TimeUnixNano: 2, Count: math.MaxUint64, Sum: ptr(1.0),
		ExplicitBounds: []float64{10}, BucketCounts: []uint64{math.MaxUint64, 0}}
	gaugeNaN := &metricpb.Metric{Name: "k6_vus", Data: &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{
		DataPoints: []*metricpb.NumberDataPoint{dbl(math.NaN(), 1)}}}}
	rate := sumMetric("k6_checks.total", delta, dbl(1e30, 1, strAttr("condition", "nonzero")))
	counter := sumMetric("k6_iterations", delta, dbl(1.7e308, 1), dbl(1.7e308, 1))
	code, resp := postOTLP(t, h, exportReq(nil, histMetric(delta, nanSum, infSum, good, huge), gaugeNaN, rate, counter))
	if code != 200 {
		t.Fatalf("OTLP: %d", code)
	}
	// NaN sum, Inf sum, the bucket count that wraps, the gauge, the rate,
	// the second counter point.
	if got := resp.GetPartialSuccess().GetRejectedDataPoints(); got != 6 {
		t.Errorf("rejected %d points, want 6: %s", got, resp.GetPartialSuccess().GetErrorMessage())
	}
	if resp.GetPartialSuccess().GetErrorMessage() == "" {
		t.Error("partial success without a message")
	}
	if got := testutil.ToFloat64(s.otlpReqs.WithLabelValues(otlp.OutcomePartial)); got != 1 {
		t.Errorf("outcome partial = %v, want 1", got)
	}
	if got := testutil.ToFloat64(s.points.WithLabelValues(SourceOTLP)); got != 2 {
		t.Errorf("points ingested = %v, want 2 (the good histogram, the first counter point)", got)
	}
	// NDJSON: the same counter overflow.
	if _, err := s.replayReader("big", strings.NewReader(
		`{"metric":"iterations","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1e308,"tags":{}}}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if got := badCount(s, SourceResults, "overflow"); got != 1 {
		t.Errorf("NDJSON overflow = %v, want 1", got)
	}
	for k, v := range scrapeText(t, h) {
		if math.IsNaN(float64(v.Value)) || math.IsInf(float64(v.Value), 0) && !strings.Contains(k, `le="+Inf"`) {
			t.Errorf("%s = %v", k, v.Value)
		}
	}
}

// Histogram points spanning 1e-30 ms to 1e300 ms cost a few native
// buckets each (sparse layout), not megabytes; one point with thousands
// of buckets is reduced in resolution to the per-series limit while the
// classic buckets stay exact.
func TestHostileWideHistograms(t *testing.T) {
	s := hostileServer(t, Config{})
	h := s.Handler()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const series = 1100
	for i := range series {
		dp := &metricpb.HistogramDataPoint{Attributes: []*commonpb.KeyValue{strAttr("name", fmt.Sprint(i))},
			StartTimeUnixNano: 1, TimeUnixNano: 2, Count: 2, Sum: ptr(1e300),
			ExplicitBounds: []float64{1e-30, 1e300}, BucketCounts: []uint64{1, 0, 1}}
		if code, resp := postOTLP(t, h, exportReq(nil, histMetric(cumul, dp))); code != 200 || resp.GetPartialSuccess() != nil {
			t.Fatalf("series %d: %d %v", i, code, resp.GetPartialSuccess())
		}
		s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: 1e-30, Tags: map[string]string{"name": fmt.Sprint("nd", i)}})
		s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: 1e300, Tags: map[string]string{"name": fmt.Sprint("nd", i)}})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	// The dense layout took about 2 MB a series here (2.2 GB in all).
	if grown > 64<<20 {
		t.Errorf("heap grew by %d MiB for %d wide histograms", grown>>20, 2*series)
	}
	if used := s.st.native.used.Load(); used > 4*series {
		t.Errorf("%d native buckets held, want at most %d", used, 4*series)
	}

	// One exponential point with 4,000 buckets at scale 20.
	counts := make([]uint64, 4000)
	for i := range counts {
		counts[i] = 1
	}
	eh := &metricpb.Metric{Name: "k6_wide", Unit: "ms", Data: &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{
		AggregationTemporality: delta, DataPoints: []*metricpb.ExponentialHistogramDataPoint{{
			StartTimeUnixNano: 1, TimeUnixNano: 2, Count: 4000, Sum: ptr(4000.0), Scale: 4,
			Positive: &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: -2000, BucketCounts: counts}}}}}}
	if code, resp := postOTLP(t, h, exportReq(nil, eh)); code != 200 || resp.GetPartialSuccess() != nil {
		t.Fatalf("exponential: %d %v", code, resp.GetPartialSuccess())
	}
	f, _ := s.st.lookup("wide")
	ser := f.snapshot()[0]
	if n := len(ser.h.pos.idx); n > defaultNativeMaxBuckets || ser.h.schema >= NativeSchema {
		t.Errorf("%d native buckets at schema %d, want at most %d at a lower schema", n, ser.h.schema, defaultNativeMaxBuckets)
	}
	var total uint64
	for _, c := range ser.h.classic {
		total += c
	}
	if total != 4000 || ser.h.count != 4000 {
		t.Errorf("classic buckets hold %d, count %d, want 4000", total, ser.h.count)
	}
	scrapeText(t, h)
}

// Distinct metric names, label sets, resources and over-long values are
// each bounded and their drops counted with a reason.
func TestHostileLimits(t *testing.T) {
	s := hostileServer(t, Config{MetricLimit: 50, SeriesLimit: 100, OTLPStreamLimit: 20, MaxLabelValue: 64})
	h := s.Handler()
	var nd strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&nd, `{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{"name":"n%d"}}}`+"\n", i)
	}
	fmt.Fprintf(&nd, `{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{"name":"%s"}}}`+"\n", strings.Repeat("x", 65))
	for i := range 1000 {
		fmt.Fprintf(&nd, `{"type":"Metric","data":{"name":"m%d","type":"counter","contains":"default"},"metric":"m%d"}`+"\n", i, i)
		fmt.Fprintf(&nd, `{"metric":"m%d","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{}}}`+"\n", i)
	}
	read, _ := s.replayReader("wide", strings.NewReader(nd.String()))
	if read != 2001 {
		t.Fatalf("read %d points", read)
	}
	if n := len(s.st.sortedFamilies()); n != 50 {
		t.Errorf("%d metrics held, limit 50", n)
	}
	if n := s.st.nseries.Load(); n != 100 {
		t.Errorf("%d series held, limit 100", n)
	}
	overflow := func(r string) float64 { return testutil.ToFloat64(s.overflow.WithLabelValues(r)) }
	// http_reqs takes 100 series (900 more overflow), one value is too
	// long, 49 more metrics fit the metric limit but not the series limit,
	// 951 definitions are refused and their points are counted once, over
	// the metric limit, not also as unknown metrics.
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"ingested", testutil.ToFloat64(s.points.WithLabelValues(SourceResults)), 100},
		{"series overflow", overflow(OverflowSeries), 949},
		{"metrics overflow", overflow(OverflowMetrics), 951},
		{"label_too_long", badCount(s, SourceResults, "label_too_long"), 1},
		{"unknown_metric", badCount(s, SourceResults, "unknown_metric"), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}

	// 600 distinct resources behind one series: cumulative stream state
	// stops at the stream limit.
	rejected := int64(0)
	for i := range 600 {
		_, resp := postOTLP(t, h, exportReq([]*commonpb.KeyValue{strAttr("host", fmt.Sprint(i))},
			sumMetric("k6_http_reqs", cumul, dbl(1, 1, strAttr("name", "n0")))))
		rejected += resp.GetPartialSuccess().GetRejectedDataPoints()
	}
	if rejected != 580 || overflow(OverflowStreams) != 580 {
		t.Errorf("rejected %d, streams overflow %v, want 580", rejected, overflow(OverflowStreams))
	}
	scrapeText(t, h)
}

// blockingBody is a request body that stalls until released.
// blockingBody sends prefix, then blocks until release.
// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type blockingBody struct {
	release chan struct{}
	prefix  []byte
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if len(b.prefix) > 0 {
		n := copy(p, b.prefix)
		b.prefix = b.prefix[n:]
		return n, nil
	}
	<-b.release
	return 0, io.EOF
}

// slowExport is a valid export request body padded with an unknown field
// to n bytes, so that a request holding it holds n bytes of the budget.
func slowExport(n int) []byte {
	b := []byte{0x0a, 0x00} // an empty ResourceMetrics
	// Field 15, length-delimited: skipped by the decoder.
	pad := n - len(b) - 4
	b = append(b, 0x7a, byte(pad&0x7f|0x80), byte(pad>>7&0x7f|0x80), byte(pad>>14))
	return append(b, make([]byte, pad)...)
}

// Slow senders hold the bytes they sent, never a decoding slot: beside
// them a normal export is taken. Past the memory budget's bytes, OTLP
// requests are told to come back later (503 with Retry-After); the ones
// in progress finish.
func TestHostileConcurrentOTLP(t *testing.T) {
	const budget = 2 << 20
	s := hostileServer(t, Config{OTLPMaxBody: 1 << 20, OTLPMemoryBudget: budget})
	// The bytes the exporter has read of the request bodies.
	var bodyRead atomic.Int64
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &countingBody{ReadCloser: r.Body, n: &bodyRead}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	release := make(chan struct{})
	var wg sync.WaitGroup
	const senders = 4 // twice the decoding slots
	// Two send two bytes each, two the largest body that leaves no room
	// for another request once all four hold what they have received.
	small := otlp.Held(2)
	big := sort.Search(1<<20, func(n int) bool { return 2*small+2*otlp.Held(int64(n)) > budget }) - 1
	if left := budget - 2*small - 2*otlp.Held(int64(big)); big <= 0 || left >= otlp.RequestCost {
		t.Fatalf("large bodies of %d bytes leave %d bytes of the budget: room for another request", big, left)
	}
	codes := make([]int, senders)
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := &blockingBody{release: release, prefix: []byte{0x0a, 0x00}}
			if i < 2 {
				full := slowExport(big + 2)
				body.prefix = full[:big] // 2 bytes short: the budget is full
			}
			resp, err := http.Post(srv.URL+"/v1/metrics", "application/x-protobuf", body)
			if err != nil {
				t.Error(err)
				return
			}
			_ = resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	post := func() *http.Response {
		resp, err := http.Post(srv.URL+"/v1/metrics", "application/x-protobuf", bytes.NewReader([]byte{0x0a, 0x00}))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	deadline := time.Now().Add(10 * time.Second)
	// Every sender's bytes have arrived: with what each request holds
	// they fill the budget, so one more request is one too many.
	sent := int64(2*big + 2*2)
	for bodyRead.Load() < sent && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := bodyRead.Load(); got != sent {
		t.Fatalf("body bytes read %d, want the %d the senders sent", got, sent)
	}
	if resp := post(); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("request past the budget: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(release)
	wg.Wait()
	for i, c := range codes {
		// The two large bodies end short of their length prefix: 400.
		if want := map[bool]int{true: http.StatusBadRequest, false: http.StatusOK}[i < 2]; c != want {
			t.Errorf("sender %d: status %d, want %d", i, c, want)
		}
	}
	if resp := post(); resp.StatusCode != http.StatusOK {
		t.Errorf("request after the senders finished: %d", resp.StatusCode)
	}
	if got := testutil.ToFloat64(s.otlpReqs.WithLabelValues(otlp.OutcomeBusy)); got != 1 {
		t.Errorf("busy outcome %v, want 1", got)
	}
}

// A cumulative export resent after a later one (same start time, lower
// value) adds nothing and is counted; a new start time is a reset.
func TestHostileLateCumulative(t *testing.T) {
	s := hostileServer(t, Config{})
	h := s.Handler()
	for _, v := range []float64{648, 917, 648, 917} {
		postOTLP(t, h, exportReq(nil, sumMetric("k6_http_reqs", cumul, dbl(v, 100))))
	}
	if got := math.Float64frombits(s.st.families["http_reqs"].snapshot()[0].bits.Load()); got != 917 {
		t.Errorf("total %v after a late export, want 917", got)
	}
	if got := badCount(s, SourceOTLP, "late_point"); got != 1 {
		t.Errorf("late points %v, want 1", got)
	}
	postOTLP(t, h, exportReq(nil, sumMetric("k6_http_reqs", cumul, dbl(5, 200))))
	if got := math.Float64frombits(s.st.families["http_reqs"].snapshot()[0].bits.Load()); got != 922 {
		t.Errorf("total %v after a restart, want 922", got)
	}
}

// A run's series go a TTL after its last point, or at once on DELETE
// (behind the web config's basic auth); other runs stay.
func TestHostileExpiryAndDelete(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webCfg, []byte("basic_auth_users:\n  k6: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := hostileServer(t, Config{SeriesTTL: 15 * time.Minute, WebConfigFile: webCfg})
	now := time.Now()
	s.st.clock.Store(now.UnixNano())
	for _, id := range []string{"old", "gone", "kept"} {
		s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: map[string]string{"testid": id}})
		s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: 12, Tags: map[string]string{"testid": id}})
	}
	// "kept" goes on 10 minutes later.
	s.st.clock.Store(now.Add(10 * time.Minute).UnixNano())
	s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: map[string]string{"testid": "kept"}})
	// A finished run replayed from a results file has no TTL.
	if _, err := s.replayReader("replayed", strings.NewReader(
		`{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{"testid":"replayed"}}}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if n := s.ExpireRuns(now.Add(16 * time.Minute)); n != 4 {
		t.Errorf("expired %d series, want 4 (old and gone)", n)
	}
	if n := s.st.nseries.Load(); n != 3 {
		t.Errorf("%d series left, want 3 (kept's two, replayed)", n)
	}
	if code := httpDelete(t, s, "replayed"); code != http.StatusOK {
		t.Errorf("DELETE of the replayed run through the handler: %d", code)
	}

	base := serveLoopback(t, s).URL
	del := func(id, user string) int {
		req, _ := http.NewRequest(http.MethodDelete, base+"/api/v1/runs/"+id, nil)
		if user != "" {
			req.SetBasicAuth(user, "secret")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := del("kept", ""); code != http.StatusUnauthorized {
		t.Errorf("DELETE without credentials: %d", code)
	}
	if code := del("nope", "k6"); code != http.StatusNotFound {
		t.Errorf("DELETE of an unknown run: %d", code)
	}
	if code := del("kept", "k6"); code != http.StatusOK {
		t.Errorf("DELETE: %d", code)
	}
	if n := s.st.nseries.Load(); n != 0 || s.st.runCount() != 0 {
		t.Errorf("%d series, %d runs left", n, s.st.runCount())
	}
}

// httpDelete sends DELETE /api/v1/runs/{id} to the handler directly.
func httpDelete(t *testing.T, s *Server, id string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/api/v1/runs/"+id, nil))
	return rec.Code
}

// The gRPC receiver applies the web config's basic auth before reading
// a message; a receiver that dies makes /-/ready fail.
func TestHostileGRPC(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	webCfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webCfg, []byte("basic_auth_users:\n  k6: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := hostileServer(t, Config{WebConfigFile: webCfg})
	addr := serveLoopback(t, s, grpcReceiver).Addr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, closeConn := dialOTLP(t, addr, insecure.NewCredentials())
	defer closeConn()
	req := exportReq(nil, sumMetric("k6_http_reqs", delta, dbl(3, 1)))
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if _, err := client.Export(cctx, req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("export without credentials: %v, want Unauthenticated", err)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("k6:wrong"))
	if _, err := client.Export(metadata.AppendToOutgoingContext(cctx, "authorization", auth), req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("export with a wrong password: %v, want Unauthenticated", err)
	}
	auth = "Basic " + base64.StdEncoding.EncodeToString([]byte("k6:secret"))
	if _, err := client.Export(metadata.AppendToOutgoingContext(cctx, "authorization", auth), req); err != nil {
		t.Errorf("export with credentials: %v", err)
	}
	if got := testutil.ToFloat64(s.points.WithLabelValues(SourceOTLP)); got != 1 {
		t.Errorf("points %v, want 1", got)
	}
	if got := testutil.ToFloat64(s.otlpReqs.WithLabelValues(otlp.OutcomeUnauthorized)); got != 2 {
		t.Errorf("unauthorized outcome %v, want 2", got)
	}

	// A receiver whose listener fails.
	dead := listenLoopback(t)
	if err := dead.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.ServeGRPC(ctx, dead); err == nil {
		t.Fatal("ServeGRPC on a closed listener returned nil")
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/-/ready", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/-/ready with a dead gRPC receiver: %d", rec.Code)
	}

	// The HTTP server bounds slow clients.
	hs, _ := s.httpServer()
	if hs.ReadTimeout == 0 || hs.WriteTimeout == 0 || hs.IdleTimeout == 0 || hs.ReadHeaderTimeout == 0 {
		t.Errorf("HTTP timeouts not all set: %+v", hs)
	}
	if hs.MaxHeaderBytes != defaultMaxHeaderBytes {
		t.Errorf("MaxHeaderBytes = %d, want %d", hs.MaxHeaderBytes, defaultMaxHeaderBytes)
	}
}

// selfSigned writes a certificate and key for 127.0.0.1 into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "exporter"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// The gRPC receiver serves TLS from the web config: a TLS client with
// credentials exports, a plaintext client cannot; an unusable TLS setting
// stops it from starting.
func TestHostileGRPCTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	hash, _ := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	webCfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webCfg, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  k6: %s\n", certFile, keyFile, hash)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := hostileServer(t, Config{WebConfigFile: webCfg})
	addr := serveLoopback(t, s, grpcReceiver).Addr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := exportReq(nil, sumMetric("k6_http_reqs", delta, dbl(3, 1)))
	auth := metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("k6:secret")))
	cctx, ccancel := context.WithTimeout(auth, 10*time.Second)
	defer ccancel()

	tlsClient, closeTLS := dialOTLP(t, addr, credentials.NewTLS(&tls.Config{RootCAs: pool}))
	defer closeTLS()
	if _, err := tlsClient.Export(cctx, req); err != nil {
		t.Errorf("TLS export with credentials: %v", err)
	}
	plain, closePlain := dialOTLP(t, addr, insecure.NewCredentials())
	defer closePlain()
	if _, err := plain.Export(cctx, req); err == nil {
		t.Error("plaintext export to the TLS receiver succeeded")
	}
	if got := testutil.ToFloat64(s.points.WithLabelValues(SourceOTLP)); got != 1 {
		t.Errorf("points %v, want 1", got)
	}

	// A key file that does not exist: ServeGRPC refuses to start.
	if err := os.WriteFile(webCfg, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", certFile, filepath.Join(dir, "missing.pem"))), 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := hostileServer(t, Config{WebConfigFile: webCfg})
	if err := s2.ServeGRPC(ctx, listenLoopback(t)); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Errorf("ServeGRPC with a broken TLS config: %v, want an error naming TLS", err)
	}
}
