package catalogue

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// docs/metrics.md is committed; it must be what the catalogue renders
// (go generate ./... rewrites it).
func TestMetricsDocUpToDate(t *testing.T) {
	got := MetricsMarkdown()
	want, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("docs/metrics.md is stale: run go generate ./...")
	}
	for _, d := range All() {
		if !strings.Contains(string(got), "`"+d.Name+"`") {
			t.Errorf("%s missing from the metrics doc", d.Name)
		}
	}
}

// Names are unique and the lookups find them.
func TestCatalogueNames(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range All() {
		if seen[d.Name] {
			t.Errorf("duplicate series name %s", d.Name)
		}
		seen[d.Name] = true
		if d.Help == "" || d.Type == "" {
			t.Errorf("%s: missing help or type", d.Name)
		}
	}
	if d, ok := Lookup("k6_http_reqs_total"); !ok || d.Type != CounterType {
		t.Errorf("Lookup(k6_http_reqs_total) = %v, %v", d, ok)
	}
	if _, ok := Lookup("no_such_series"); ok {
		t.Error("Lookup found an unknown name")
	}
}
