package exporter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/envelope-dev/envelope/internal/k6"
)

// Limits mean what the command line says: 0 is no limit, the defaults
// come from DefaultConfig, a negative limit is refused.
func TestLimitConvention(t *testing.T) {
	fill := func(cfg Config, n int) *Server {
		t.Helper()
		cfg.DisableExporterMetrics = true
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: map[string]string{"testid": "limits", "name": fmt.Sprint(i)}})
		}
		return s
	}
	n := defaultSeriesLimit + 5
	for _, c := range []struct {
		name      string
		cfg       Config
		held      int
		overflown float64
	}{
		{"zero config: no limit", Config{}, n, 0},
		{"default config", DefaultConfig(), defaultSeriesLimit, 5},
		{"explicit limit", Config{SeriesLimit: 7}, 7, float64(n - 7)},
	} {
		s := fill(c.cfg, n)
		if got := int(s.st.nseries.Load()); got != c.held {
			t.Errorf("%s: %d series held, want %d", c.name, got, c.held)
		}
		if got := testutil.ToFloat64(s.overflow.WithLabelValues("series")); got != c.overflown {
			t.Errorf("%s: %v samples over the limit, want %v", c.name, got, c.overflown)
		}
	}
	for _, cfg := range []Config{{SeriesLimit: -1}, {MetricLimit: -1}, {SeriesTTL: -1}, {OTLPStreamLimit: -1}, {MaxConnections: -1}, {NativeBucketBudget: -1}} {
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "0 means no limit") {
			t.Errorf("%+v: err = %v, want a refusal saying 0 means no limit", cfg, err)
		}
	}
	d := DefaultConfig()
	for name, ok := range map[string]bool{
		"series":      d.SeriesLimit == defaultSeriesLimit,
		"metrics":     d.MetricLimit == defaultMetricLimit,
		"label":       d.MaxLabelValue == defaultMaxLabelValue,
		"ttl":         d.SeriesTTL == defaultSeriesTTL,
		"native":      d.NativeMaxBuckets == defaultNativeMaxBuckets && d.NativeBucketBudget == defaultNativeBucketBudget,
		"otlp budget": d.OTLPMemoryBudget == defaultOTLPMemoryBudget && d.OTLPStreamLimit > 0,
		"connections": d.MaxConnections == defaultMaxConnections && d.MaxRequests == defaultMaxRequests,
	} {
		if !ok {
			t.Errorf("DefaultConfig: %s bound not at its default: %+v", name, d)
		}
	}
}
