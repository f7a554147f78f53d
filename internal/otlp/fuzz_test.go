package otlp

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
)

// checkSink fails the test on anything the exporter's store could not
// take: a counter going down, a non-finite figure, mismatched buckets.
type checkSink struct {
	t     *testing.T
	types map[string]k6.MetricType
}

func (s *checkSink) finite(what, name string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		s.t.Fatalf("%s %s: non-finite %v", what, name, v)
	}
}

func (s *checkSink) Define(name string, typ k6.MetricType, _ k6.ValueType) error {
	if old, ok := s.types[name]; ok && old != typ {
		return fmt.Errorf("type %s, not %s", old, typ)
	}
	s.types[name] = typ
	return nil
}

func (s *checkSink) AddCounter(name string, _ map[string]string, d float64) error {
	s.finite("counter", name, d)
	if d < 0 {
		s.t.Fatalf("counter %s: negative increment %v", name, d)
	}
	return nil
}

func (s *checkSink) SetGauge(name string, _ map[string]string, v float64) error {
	s.finite("gauge", name, v)
	return nil
}
func (s *checkSink) AddRate(string, map[string]string, uint64, uint64) error { return nil }

func (s *checkSink) AddBuckets(name string, _ map[string]string, values []float64, counts []uint64, sum float64) error {
	if len(values) != len(counts) {
		s.t.Fatalf("histogram %s: %d values for %d counts", name, len(values), len(counts))
	}
	s.finite("histogram sum", name, sum)
	for i, v := range values {
		if counts[i] > 0 {
			s.finite("histogram bucket value", name, v)
		}
	}
	return nil
}

func (s *checkSink) Refuse(*Refusal, int) {}

func (s *checkSink) Ingested(n int, _ int64) {
	if n < 0 {
		s.t.Fatalf("ingested %d points", n)
	}
}

// smallRequest keeps the first n metrics of each scope: seeds the fuzzer
// can mutate quickly.
func smallRequest(req *colmetricpb.ExportMetricsServiceRequest, n int) *colmetricpb.ExportMetricsServiceRequest {
	out := proto.Clone(req).(*colmetricpb.ExportMetricsServiceRequest)
	for _, rm := range out.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			sm.Metrics = sm.Metrics[:min(n, len(sm.Metrics))]
		}
	}
	return out
}

// FuzzServeHTTP posts arbitrary bodies as protobuf and as JSON, twice to
// the same receiver (the second post exercises the cumulative-to-delta
// state): the handler never panics, answers 200 or a 4xx, and hands the
// sink only finite figures and counters that never go down.
func FuzzServeHTTP(f *testing.F) {
	b, err := os.ReadFile(fixtures.Path(f, "k6/baseline-mix-v2.2.0/otlp-sample-otlp/otlp-001.bin"))
	if err != nil {
		f.Fatal(err)
	}
	req := &colmetricpb.ExportMetricsServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		f.Fatal(err)
	}
	for _, n := range []int{1, 3, 8} {
		small := smallRequest(req, n)
		pb, err := proto.Marshal(small)
		if err != nil {
			f.Fatal(err)
		}
		js, err := protojson.Marshal(small)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pb, false)
		f.Add(js, true)
	}
	f.Add([]byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"k6_x","sum":{"isMonotonic":true,"aggregationTemporality":2,"dataPoints":[{"asDouble":-1}]}}]}]}]}`), true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, body []byte, asJSON bool) {
		ctype := "application/x-protobuf"
		if asJSON {
			ctype = "application/json"
		}
		rc := NewReceiver(&checkSink{t: t, types: map[string]k6.MetricType{}}, Options{MaxBody: 1 << 20})
		for i := range 2 {
			r := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(body))
			r.Header.Set("Content-Type", ctype)
			w := httptest.NewRecorder()
			rc.ServeHTTP(w, r)
			switch w.Code {
			case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			default:
				t.Fatalf("post %d: status %d: %s", i+1, w.Code, w.Body)
			}
			if w.Code != http.StatusOK {
				if i == 1 {
					t.Fatal("the same body was accepted once and refused once")
				}
				return
			}
			resp := &colmetricpb.ExportMetricsServiceResponse{}
			var err error
			if asJSON {
				err = protojson.Unmarshal(w.Body.Bytes(), resp)
			} else {
				err = proto.Unmarshal(w.Body.Bytes(), resp)
			}
			if err != nil {
				t.Fatal(fmt.Errorf("post %d: undecodable response: %w", i+1, err))
			}
		}
	})
}
