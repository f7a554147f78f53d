package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
)

// The real captures of k6's OTLP pushes, each with the run it came from.
const (
	grpcCapture = "k6/baseline-mix-v2.2.0/otlp-grpc-exponential-otlp/grpc-*.bin"
	grpcNDJSON  = "k6/baseline-mix-v2.2.0/otlp-grpc-exponential.ndjson.gz"
	grpcSummary = "k6/baseline-mix-v2.2.0/otlp-grpc-exponential.summary.json"
	httpCapture = "k6/baseline-mix-v2.2.0/otlp-sample-otlp/otlp-*.bin"
	httpSummary = "k6/baseline-mix-v2.2.0/otlp-sample.summary.json"
)

// captureBodies reads a capture's export requests as protobuf bodies:
// gRPC bodies lose their 5-byte message prefix (uncompressed in these
// captures).
func captureBodies(t testing.TB, pattern string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, p := range fixtures.Glob(t, pattern) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(p, "grpc-") {
			if len(b) < 5 || b[0] != 0 {
				t.Fatalf("%s: not an uncompressed gRPC message", p)
			}
			b = b[5:]
		}
		out = append(out, b)
	}
	return out
}

// replayOrders are the delivery orders every capture is replayed in: as
// sent, with a call repeated (a retry), and with two calls swapped (a
// late export). Each ends with every call delivered.
func replayOrders(n int) map[string][]int {
	inOrder := make([]int, n)
	for i := range inOrder {
		inOrder[i] = i
	}
	repeated := slices.Insert(slices.Clone(inOrder), n/2, n/2)
	swapped := slices.Clone(inOrder)
	swapped[n/2], swapped[n/2+1] = swapped[n/2+1], swapped[n/2]
	lastSwapped := slices.Clone(inOrder)
	lastSwapped[n-2], lastSwapped[n-1] = lastSwapped[n-1], lastSwapped[n-2]
	return map[string][]int{"in_order": inOrder, "repeated": repeated, "swapped": swapped, "last_swapped": lastSwapped}
}

// postCapture sends bodies to the OTLP/HTTP handler.
func postCapture(t *testing.T, s *Server, bodies [][]byte, order []int) {
	t.Helper()
	h := s.Handler()
	for _, i := range order {
		req := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(bodies[i]))
		req.Header.Set("Content-Type", "application/x-protobuf")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("call %d: status %d: %s", i+1, rec.Code, rec.Body)
		}
	}
}

// exportCapture sends bodies to the OTLP/gRPC receiver with a real gRPC
// client.
func exportCapture(t *testing.T, s *Server, bodies [][]byte, order []int) {
	t.Helper()
	sv := serveLoopback(t, s, grpcReceiver)
	defer sv.stop() // its error fails the test at cleanup
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, closeConn := dialOTLP(t, sv.Addr, insecure.NewCredentials())
	defer closeConn() // before sv.stop: deferred later, runs first
	for _, i := range order {
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(bodies[i], req); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if _, err := client.Export(ctx, req); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
}

var transports = map[string]func(*testing.T, *Server, [][]byte, []int){"http": postCapture, "grpc": exportCapture}

// figure is one label set's totals: a counter's value, or a histogram's
// count and sum.
type figure struct {
	value float64
	count uint64
}

// labelTotals lists every counter and histogram label set of the k6 series.
func labelTotals(t *testing.T, s *Server) map[string]figure {
	t.Helper()
	out := map[string]figure{}
	for _, mf := range s.st.gather() {
		for _, m := range mf.GetMetric() {
			key := mf.GetName() + labelString(m.GetLabel())
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = figure{value: m.GetCounter().GetValue()}
			case dto.MetricType_HISTOGRAM:
				out[key] = figure{value: m.GetHistogram().GetSampleSum(), count: m.GetHistogram().GetSampleCount()}
			}
		}
	}
	return out
}

func labelString(ls []*dto.LabelPair) string {
	var b strings.Builder
	b.WriteByte('{')
	for _, l := range ls {
		b.WriteString(l.GetName() + "=" + l.GetValue() + ",")
	}
	b.WriteByte('}')
	return b.String()
}

// sameSum compares float sums added up in different orders (k6's SDK
// sample by sample, NDJSON line by line): they agree to rounding.
func sameSum(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// Every real capture, over both transports and in every delivery order,
// gives every counter and every histogram count and sum of every label
// set that the same run's NDJSON gives: cumulative exponential points
// rescaled between calls are differenced at their common scale.
func TestReplayGRPCCaptureEqualsNDJSON(t *testing.T) {
	want := newReplayServer(t)
	if _, err := want.ReplayFile(fixtures.Path(t, grpcNDJSON)); err != nil {
		t.Fatal(err)
	}
	wantTotals := labelTotals(t, want)
	bodies := captureBodies(t, grpcCapture)
	scales := coarsestScales(t, bodies[len(bodies)-1])
	for tname, send := range transports {
		for oname, order := range replayOrders(len(bodies)) {
			t.Run(tname+"/"+oname, func(t *testing.T) {
				s := newReplayServer(t)
				send(t, s, bodies, order)
				got := labelTotals(t, s)
				for key, w := range wantTotals {
					g, ok := got[key]
					switch {
					case !ok:
						t.Errorf("%s: missing (NDJSON: %v, count %d)", key, w.value, w.count)
					case g.count != w.count || !sameSum(g.value, w.value):
						t.Errorf("%s = %v (count %d), NDJSON %v (count %d)", key, g.value, g.count, w.value, w.count)
					}
				}
				for key := range got {
					if _, ok := wantTotals[key]; !ok {
						t.Errorf("%s: not in the NDJSON", key)
					}
				}
				if len(got) == 0 {
					t.Fatal("no series")
				}
				checkP95(t, s, fixtures.Path(t, grpcSummary), scales)
			})
		}
	}
}

func newReplayServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Config{DisableExporterMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// summaryMetrics reads a k6 --summary-export file's metrics.
func summaryMetrics(t *testing.T, path string) map[string]map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Metrics map[string]map[string]any `json:"metrics"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for name, fields := range sum.Metrics {
		out[name] = map[string]float64{}
		for k, v := range fields {
			if f, ok := v.(float64); ok {
				out[name][k] = f
			}
		}
	}
	return out
}

// checkP95 compares each trend's p95 over all its series with k6's
// summary, within one bucket width of the coarsest exponential layout k6
// sent for it (scales is the capture's last call): k6 interpolates
// between the samples of ranks floor and ceil of 0.95*(n-1), and each
// sample stands at its OTel bucket's geometric middle, less than a bucket
// width away.
func checkP95(t *testing.T, s *Server, summary string, scales map[string]int32) {
	t.Helper()
	sm := summaryMetrics(t, summary)
	for _, name := range []string{"http_req_duration", "http_req_waiting", "iteration_duration", "auth_login", "auth_register", "actor_get", "document_upload"} {
		f, err := s.st.lookup(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		scale, ok := scales[name]
		if !ok {
			t.Fatalf("%s: no exponential histogram in the capture", name)
		}
		var hs []*dto.Histogram
		for _, se := range f.snapshot() {
			h := &dto.Histogram{}
			se.h.write(h, nil)
			hs = append(hs, h)
		}
		b := mergeNative(t, hs)
		r := 0.95 * float64(b.total-1)
		lo, _ := b.bucketOf(t, uint64(math.Floor(r)))
		_, hi := b.bucketOf(t, uint64(math.Ceil(r)))
		k6p95 := sm[name]["p(95)"] / 1000
		w := math.Exp2(math.Exp2(-float64(scale))) - 1 // relative width of an OTel bucket
		if k6p95 < lo*(1-w) || k6p95 > hi*(1+w) {
			t.Errorf("%s p95: ranks in (%v, %v] s, k6 %v s: more than one bucket width (scale %d) apart", name, lo, hi, k6p95, scale)
		} else {
			t.Logf("%s p95: ranks in (%.6f, %.6f] s, k6 %.6f s, OTel scale %d", name, lo, hi, k6p95, scale)
		}
	}
}

// coarsestScales is each k6 metric's coarsest exponential scale in an
// export request.
func coarsestScales(t *testing.T, body []byte) map[string]int32 {
	t.Helper()
	req := &colmetricpb.ExportMetricsServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				name := strings.TrimPrefix(m.GetName(), "k6_")
				for _, dp := range m.GetExponentialHistogram().GetDataPoints() {
					if sc, ok := out[name]; !ok || dp.GetScale() < sc {
						out[name] = dp.GetScale()
					}
				}
			}
		}
	}
	return out
}

// nativeBuckets is the positive native buckets of several histograms of
// one schema, merged.
type nativeBuckets struct {
	keys   []int32
	counts map[int32]uint64
	zero   uint64
	total  uint64
	base   float64 // bucket k is (base^(k-1), base^k]
	growth float64
}

func mergeNative(t *testing.T, hs []*dto.Histogram) *nativeBuckets {
	t.Helper()
	b := &nativeBuckets{counts: map[int32]uint64{}}
	schema := hs[0].GetSchema()
	for _, h := range hs {
		if h.GetSchema() != schema {
			t.Fatalf("schemas %d and %d", schema, h.GetSchema())
		}
		b.total += h.GetSampleCount()
		b.zero += h.GetZeroCount()
		idx, c, d := int32(0), int64(0), h.GetPositiveDelta()
		for k, sp := range h.GetPositiveSpan() {
			idx += sp.GetOffset()
			if k > 0 {
				idx++
			}
			for j := range sp.GetLength() {
				if j > 0 {
					idx++
				}
				c += d[0]
				d = d[1:]
				b.counts[idx] += uint64(c)
			}
		}
	}
	for k := range b.counts {
		b.keys = append(b.keys, k)
	}
	slices.Sort(b.keys)
	b.base = math.Exp2(math.Exp2(-float64(schema)))
	b.growth = b.base
	return b
}

// bucketOf returns the bounds of the bucket holding the sample of
// 0-based rank i.
func (b *nativeBuckets) bucketOf(t *testing.T, i uint64) (lo, hi float64) {
	t.Helper()
	cum := b.zero
	if i < cum {
		return 0, 0
	}
	for _, k := range b.keys {
		cum += b.counts[k]
		if i < cum {
			return math.Pow(b.base, float64(k-1)), math.Pow(b.base, float64(k))
		}
	}
	t.Fatalf("rank %d beyond the %d samples", i, cum)
	return 0, 0
}

// checkSummary compares every counter, rate and trend of a k6 summary
// with the exporter's series of that metric added up over label sets:
// counts exact, sums to rounding.
func checkSummary(t *testing.T, s *Server, summary string) {
	t.Helper()
	checkSummaryAgainst(t, s, summaryMetrics(t, summary))
}

// checkSummaryAgainst is checkSummary with the summary's metrics read.
func checkSummaryAgainst(t *testing.T, s *Server, metrics map[string]map[string]float64) {
	t.Helper()
	checked := 0
	for name, m := range metrics {
		if strings.Contains(name, "{") {
			continue // a submetric: a subset of its metric's series
		}
		f, err := s.st.lookup(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var value float64
		var count, zero, nonzero uint64
		for _, se := range f.snapshot() {
			value += math.Float64frombits(se.bits.Load())
			zero += se.zero.Load()
			nonzero += se.nonzero.Load()
			if se.h != nil {
				se.h.mu.Lock()
				count += se.h.count
				value += se.h.sum / f.scale
				se.h.mu.Unlock()
			}
		}
		switch f.typ {
		case k6.Counter:
			if !sameSum(value, m["count"]) {
				t.Errorf("%s = %v, k6 %v", name, value, m["count"])
			}
		case k6.Rate:
			if float64(nonzero) != m["passes"] || float64(zero) != m["fails"] {
				t.Errorf("%s: %d nonzero, %d zero; k6 %v passes, %v fails", name, nonzero, zero, m["passes"], m["fails"])
			}
		case k6.Trend:
			if float64(count) != m["count"] || !sameSum(value, m["avg"]*m["count"]) {
				t.Errorf("%s: count %d, sum %v; k6 count %v, sum %v", name, count, value, m["count"], m["avg"]*m["count"])
			}
		default:
			continue // gauges: k6 keeps the last value, the exporter too, but not of one series
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("only %d metrics compared", checked)
	}
}

// The OTLP/HTTP capture (explicit buckets), over both transports and in
// every delivery order, gives every counter, rate and trend count and sum
// of the same run's summary. So does the gRPC capture.
func TestReplayCapturesEqualSummary(t *testing.T) {
	for _, c := range []struct{ capture, summary string }{{httpCapture, httpSummary}, {grpcCapture, grpcSummary}} {
		bodies := captureBodies(t, c.capture)
		for tname, send := range transports {
			for oname, order := range replayOrders(len(bodies)) {
				t.Run(strings.SplitN(c.capture, "/", 3)[2][:9]+"/"+tname+"/"+oname, func(t *testing.T) {
					s := newReplayServer(t)
					send(t, s, bodies, order)
					checkSummary(t, s, fixtures.Path(t, c.summary))
				})
			}
		}
	}
}
