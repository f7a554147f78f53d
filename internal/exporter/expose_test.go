package exporter

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
)

// The scrape's rendering, family by family and histogram series by
// series, writes the bytes a whole gather encodes, in every format: a
// real k6 run plus more histogram series of one family than a text
// rendering step holds.
func TestExposeMatchesGather(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DisableExporterMetrics = true // their figures move between two gathers
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplayFile(fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-a.ndjson.gz")); err != nil {
		t.Fatal(err)
	}
	for i := range 3*textChunk + 5 {
		tags := map[string]string{"testid": "wide", "name": fmt.Sprintf("ep-%03d", i)}
		for j := range 20 {
			s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: float64(1 + (i*37+j*101)%5000), Tags: tags})
		}
	}
	g := s.Gatherer()
	for _, format := range acceptedFormats {
		var want, got bytes.Buffer
		if err := encodeAll(&want, g, format); err != nil {
			t.Fatal(err)
		}
		if err := g.(exposer).expose(&got, format); err != nil {
			t.Fatal(err)
		}
		if want.Len() < 100_000 {
			t.Fatalf("%s: only %d bytes rendered: the fixture did not load", format, want.Len())
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: the rendering differs from the gather's encoding (%d against %d bytes)", format, got.Len(), want.Len())
		}
	}
}
