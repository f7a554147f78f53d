package exporter

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/envelope-dev/envelope/internal/k6"
)

// refusalCounts reads bad_lines_total and series_overflow_total as
// "bad/source/reason" and "overflow/reason" keys.
func refusalCounts(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		prefix := ""
		switch mf.GetName() {
		case "envelope_exporter_bad_lines_total":
			prefix = "bad"
		case "envelope_exporter_series_overflow_total":
			prefix = "overflow"
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key := prefix + "/" + labels["reason"]
			if src, ok := labels["source"]; ok {
				key = prefix + "/" + src + "/" + labels["reason"]
			}
			if v := m.GetCounter().GetValue(); v != 0 {
				out[key] = v
			}
		}
	}
	return out
}

func ndjsonPoint(metric string, v float64, tags string) string {
	return fmt.Sprintf(`{"metric":%q,"type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":%v,"tags":{%s}}}`+"\n", metric, v, tags)
}

// Every refusal is counted exactly once per refused point, under its
// source and reason (or as an overflow for a limit), whichever input it
// came from and wherever it was judged: the store, the OTLP sink or the
// receiver.
func TestRefusalsCountedOnce(t *testing.T) {
	otlpPost := func(t *testing.T, s *Server, ms ...*metricpb.Metric) {
		t.Helper()
		if code, _ := postOTLP(t, s.Handler(), exportReq(nil, ms...)); code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	replay := func(t *testing.T, s *Server, lines string) {
		t.Helper()
		if _, err := s.replayReader("in", strings.NewReader(lines)); err != nil {
			t.Fatal(err)
		}
	}
	hist := func(start uint64, bounds []float64, counts ...uint64) *metricpb.HistogramDataPoint {
		var n uint64
		for _, c := range counts {
			n += c
		}
		return &metricpb.HistogramDataPoint{StartTimeUnixNano: start, TimeUnixNano: start + 10 + n, Count: n, ExplicitBounds: bounds, BucketCounts: counts}
	}
	for _, c := range []struct {
		name string
		cfg  Config
		feed func(*testing.T, *Server)
		want string // the one key that grows
		n    float64
	}{
		{"results/malformed", Config{}, func(t *testing.T, s *Server) { replay(t, s, "{not json\n") }, "bad/results/malformed", 1},
		{"results/unknown_metric", Config{}, func(t *testing.T, s *Server) { replay(t, s, ndjsonPoint("nope", 1, `"testid":"a"`)) }, "bad/results/unknown_metric", 1},
		{"results/negative counter", Config{}, func(t *testing.T, s *Server) { replay(t, s, ndjsonPoint("http_reqs", -1, `"testid":"a"`)) }, "bad/results/bad_value", 1},
		{"results/label_too_long", Config{MaxLabelValue: 4}, func(t *testing.T, s *Server) {
			replay(t, s, ndjsonPoint("http_reqs", 1, `"testid":"abcdef"`))
		}, "bad/results/label_too_long", 1},
		{"results/series limit", Config{SeriesLimit: 1}, func(t *testing.T, s *Server) {
			replay(t, s, ndjsonPoint("http_reqs", 1, `"testid":"a"`)+ndjsonPoint("http_reqs", 1, `"testid":"b"`)+ndjsonPoint("http_reqs", 1, `"testid":"c"`))
		}, "overflow/series", 2},
		{"results/metric limit", Config{MetricLimit: 1}, func(t *testing.T, s *Server) {
			def := func(name string) string {
				return fmt.Sprintf(`{"type":"Metric","data":{"name":%q,"type":"counter","contains":"default"},"metric":%q}`+"\n", name, name)
			}
			replay(t, s, def("a")+ndjsonPoint("a", 1, `"testid":"a"`)+def("b")+ndjsonPoint("b", 1, `"testid":"a"`)+ndjsonPoint("b", 2, `"testid":"a"`))
		}, "overflow/metrics", 2},
		{"api/metric limit, defined", Config{MetricLimit: 1}, func(t *testing.T, s *Server) {
			s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: map[string]string{"testid": "a"}})
			s.DefineMetric(&k6.MetricDef{Name: "custom", Type: k6.Counter, Contains: k6.Default})
			s.IngestPoint(&k6.Point{Metric: "custom", Value: 1, Tags: map[string]string{"testid": "a"}})
		}, "overflow/metrics", 1},
		{"api/NaN", Config{}, func(t *testing.T, s *Server) {
			s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: math.NaN(), Tags: map[string]string{"testid": "a"}})
		}, "bad/api/bad_value", 1},
		{"api/metric limit", Config{MetricLimit: 1}, func(t *testing.T, s *Server) {
			s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: map[string]string{"testid": "a"}})
			s.IngestPoint(&k6.Point{Metric: "iterations", Value: 1, Tags: map[string]string{"testid": "a"}})
		}, "overflow/metrics", 1},
		{"otlp/NaN", Config{}, func(t *testing.T, s *Server) {
			otlpPost(t, s, sumMetric("k6_http_reqs", cumul, dbl(math.NaN(), 1)))
		}, "bad/otlp/bad_value", 1},
		{"otlp/unsupported_type", Config{}, func(t *testing.T, s *Server) {
			otlpPost(t, s, &metricpb.Metric{Name: "k6_x", Data: &metricpb.Metric_Summary{Summary: &metricpb.Summary{
				DataPoints: []*metricpb.SummaryDataPoint{{}, {}}}}})
		}, "bad/otlp/unsupported_type", 2},
		{"otlp/prefix", Config{OTLPMetricPrefix: "k6_"}, func(t *testing.T, s *Server) {
			otlpPost(t, s, sumMetric("other_reqs", cumul, dbl(1, 1), dbl(2, 1, strAttr("a", "b")), dbl(3, 1, strAttr("a", "c"))))
		}, "bad/otlp/prefix", 3},
		{"otlp/late_point", Config{}, func(t *testing.T, s *Server) {
			otlpPost(t, s, sumMetric("k6_http_reqs", cumul, dbl(5, 1)))
			otlpPost(t, s, sumMetric("k6_http_reqs", cumul, dbl(3, 1)))
		}, "bad/otlp/late_point", 1},
		{"otlp/before_restart", Config{}, func(t *testing.T, s *Server) {
			otlpPost(t, s, sumMetric("k6_http_reqs", cumul, dbl(5, 100)))
			otlpPost(t, s, sumMetric("k6_http_reqs", cumul, dbl(3, 1)))
		}, "bad/otlp/before_restart", 1},
		{"otlp/bounds_changed", Config{}, func(t *testing.T, s *Server) {
			otlpPost(t, s, histMetric(cumul, hist(1, []float64{10}, 1, 1)))
			otlpPost(t, s, histMetric(cumul, hist(1, []float64{5, 10}, 1, 1, 1)))
		}, "bad/otlp/bounds_changed", 1},
		{"otlp/type_conflict", Config{}, func(t *testing.T, s *Server) {
			replay(t, s, ndjsonPoint("http_reqs", 1, `"testid":"a"`))
			m := histMetric(cumul, hist(1, []float64{10}, 1, 1), hist(2, []float64{10}, 1, 1))
			m.Name = "k6_http_reqs"
			otlpPost(t, s, m)
		}, "bad/otlp/type_conflict", 2},
		{"otlp/metric limit", Config{MetricLimit: 1}, func(t *testing.T, s *Server) {
			otlpPost(t, s, sumMetric("k6_http_reqs", cumul, dbl(1, 1)))
			otlpPost(t, s, sumMetric("k6_iterations", cumul, dbl(1, 1), dbl(1, 1, strAttr("a", "b"))))
		}, "overflow/metrics", 2},
		{"otlp/series limit", Config{SeriesLimit: 1}, func(t *testing.T, s *Server) {
			otlpPost(t, s, sumMetric("k6_http_reqs", cumul, dbl(1, 1, strAttr("testid", "a")), dbl(1, 1, strAttr("testid", "b"))))
		}, "overflow/series", 1},
		{"otlp/stream limit", Config{OTLPStreamLimit: 1}, func(t *testing.T, s *Server) {
			otlpPost(t, s, sumMetric("k6_http_reqs", cumul, dbl(1, 1, strAttr("name", "a")), dbl(1, 1, strAttr("name", "b"))))
		}, "overflow/streams", 1},
		{"otlp/request", Config{}, func(t *testing.T, s *Server) {
			req := httptest.NewRequest(http.MethodPost, "/v1/metrics", strings.NewReader("\xff\xff"))
			req.Header.Set("Content-Type", "application/x-protobuf")
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != 400 {
				t.Fatalf("status %d", rec.Code)
			}
		}, "bad/otlp/bad_request", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := hostileServer(t, c.cfg)
			c.feed(t, s)
			got := refusalCounts(t, s)
			if got[c.want] != c.n || len(got) != 1 {
				t.Errorf("counted %v, want only %s = %v", got, c.want, c.n)
			}
		})
	}
}
