package exporter

import (
	"bytes"
	"os"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// counterTotals sums every k6 counter and histogram sample count by
// family, the figures that must never go down.
func counterTotals(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	mfs, err := s.K6Gatherer().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[mf.GetName()] += m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[mf.GetName()] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// FuzzLineIngester feeds arbitrary NDJSON through the live ingest path
// (label handling, the series limit, histogram updates): it never panics,
// the store always gathers, and replaying the same lines again never makes
// a counter or a histogram's count go down.
func FuzzLineIngester(f *testing.F) {
	data, err := os.ReadFile(fixtures.Path(f, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	// A few lines at a time: each seed holds the Metric lines it needs.
	for i := 0; i+12 <= len(lines) && i < 240; i += 12 {
		f.Add(bytes.Join(lines[i:i+12], nil))
	}
	f.Add([]byte(`{"type":"Metric","data":{"name":"c","type":"counter","contains":"default"},"metric":"c"}
{"metric":"c","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":-5,"tags":{"name":"\xff"}}}`))
	f.Add([]byte(`{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1e308,"tags":{"status":"","url":"a","":"b"}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		// A small limit so overflow is reached; url as an extra label.
		s, err := New(Config{DisableExporterMetrics: true, SeriesLimit: 4, AllowTags: []string{"url"}, Envelope: testEnvelope()})
		if err != nil {
			t.Fatal(err)
		}
		feed := func() {
			li := s.newLineIngester(SourceNDJSON, "fuzz", true)
			for line := range bytes.Lines(in) {
				li.line(line)
			}
			li.flush()
		}
		feed()
		before := counterTotals(t, s)
		feed()
		after := counterTotals(t, s)
		for name, v := range before {
			if after[name] < v {
				t.Fatalf("%s went down from %v to %v", name, v, after[name])
			}
		}
		if n := s.st.nseries.Load(); n > 4 {
			t.Fatalf("%d series beyond the limit of 4", n)
		}
	})
}
