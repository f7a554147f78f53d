package exporter

import (
	"bytes"
	"flag"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/promtest"
)

var update = flag.Bool("update", false, "rewrite the golden exposition files in testdata/golden")

// fixedTime makes created timestamps reproducible in golden files.
var fixedTime = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func testEnvelope() *envelope.Envelope {
	return &envelope.Envelope{
		Name:       "golden",
		Runs:       make([]envelope.Run, 3),
		Throughput: envelope.Spread{N: 3, Mean: 56.1, Min: 55.97, Max: 56.28, CV: 0.0024},
		Iterations: envelope.Spread{N: 3, Mean: 44.77, Min: 44.5, Max: 45.01},
		Latency: envelope.Latency{
			Median: envelope.Band{Min: 6.1, Max: 6.5, N: 3},
			P95:    envelope.Band{Min: 357.7, Max: 405.3, N: 3},
			P99:    envelope.Band{Min: 922.7, Max: 937.2, N: 3},
		},
		Errors: envelope.Errors{Failed: 0, Total: 1000, Rate: 0},
		Endpoints: map[string]envelope.Endpoint{
			"actor_get": {Metric: "actor_get", P95: envelope.Band{Min: 12, Max: 15, N: 3}, P99: envelope.Band{Min: 30, Max: 41.5, N: 3}, Share: 0.8},
			"home":      {Tag: "name", Value: "home", P95: envelope.Band{Min: 100, Max: 120, N: 3}},
		},
		Tolerance: figures.Tolerance{ThroughputDrop: 0.05, LatencyRise: 0.1, ErrorRatio: 0, MaxCV: 0.02, Window: "5m"},
	}
}

// goldenServer ingests a small, hand-written k6 stream: every metric type,
// a root-group sample (empty group), an unbounded url tag, a custom trend.
func goldenServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.DisableExporterMetrics = true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.st.now = func() time.Time { return fixedTime }
	s.DefineMetric(&k6.MetricDef{Name: "actor_get", Type: k6.Trend, Contains: k6.Time})
	s.DefineMetric(&k6.MetricDef{Name: "batch_size", Type: k6.Trend, Contains: k6.Default})
	home := map[string]string{"testid": "t1", "scenario": "s", "name": "home", "method": "GET", "status": "200",
		"expected_response": "true", "group": "", "url": "http://example.com/?id=1", "proto": "HTTP/1.1"}
	miss := map[string]string{"testid": "t1", "scenario": "s", "name": "missing", "method": "GET", "status": "404",
		"expected_response": "false", "group": "::g", "url": "http://example.com/x"}
	for i, v := range []float64{5, 120, 360, 405.3, 1000} {
		tags := home
		if i == 4 {
			tags = miss
		}
		s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: tags})
		s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: v, Tags: tags})
		failed := 0.0
		if i == 4 {
			failed = 1
		}
		s.IngestPoint(&k6.Point{Metric: "http_req_failed", Value: failed, Tags: tags})
		s.IngestPoint(&k6.Point{Metric: "data_received", Value: 1000, Tags: tags})
	}
	s.IngestPoint(&k6.Point{Metric: "actor_get", Value: 14.2, Tags: map[string]string{"testid": "t1", "scenario": "s"}})
	s.IngestPoint(&k6.Point{Metric: "batch_size", Value: 7, Tags: map[string]string{"testid": "t1", "scenario": "s"}})
	s.IngestPoint(&k6.Point{Metric: "vus", Value: 10, Tags: map[string]string{"testid": "t1"}})
	s.IngestPoint(&k6.Point{Metric: "vus", Value: 12, Tags: map[string]string{"testid": "t1"}})
	s.IngestPoint(&k6.Point{Metric: "iterations", Value: 1, Tags: map[string]string{"testid": "t1", "scenario": "s", "group": ""}})
	s.IngestPoint(&k6.Point{Metric: "checks", Value: 1, Tags: map[string]string{"testid": "t1", "scenario": "s", "check": "is 200", "group": ""}})
	s.IngestPoint(&k6.Point{Metric: "checks", Value: 0, Tags: map[string]string{"testid": "t1", "scenario": "s", "check": "is 200", "group": ""}})
	return s
}

func render(t *testing.T, g prometheus.Gatherer) []byte {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// golden compares a collector's exposition with testdata/golden/name
// (pedantic registry), rewriting it with -update.
func golden(t *testing.T, name string, c prometheus.Collector) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, render(t, reg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // only read
	if err := testutil.CollectAndCompare(c, f); err != nil {
		t.Error(err)
	}
}

func TestGoldenK6(t *testing.T) {
	s := goldenServer(t, Config{Envelope: testEnvelope()})
	golden(t, "k6.prom", &k6Collector{st: s.st})
}

func TestGoldenEnvelope(t *testing.T) {
	golden(t, "envelope.prom", newEnvelopeCollector([]*envelope.Envelope{testEnvelope()}))
}

// Lint every family the exporter serves; only a user's own metric name
// (k6's "custom_gauge" in runA) may trip the type-in-name check.
func TestLint(t *testing.T) {
	s := goldenServer(t, Config{Envelope: testEnvelope()})
	if _, err := s.ReplayFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")); err != nil {
		t.Fatal(err)
	}
	s.Handler() // registers the promhttp self-metrics
	problems, err := testutil.GatherAndLint(s.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if p.Metric == "k6_custom_gauge" {
			continue
		}
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// promtool check metrics must accept the served text exposition.
func TestPromtoolCheckMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds promtool")
	}
	s := goldenServer(t, Config{Envelope: testEnvelope()})
	if _, err := s.ReplayFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := new(bytes.Buffer)
	_, err = body.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	cmd := promtest.PromtoolCmd(t, "check", "metrics")
	cmd.Stdin = body
	out, err := cmd.CombinedOutput()
	// As with the linter, the user-named k6_custom_gauge is the only finding allowed.
	var findings []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !strings.HasPrefix(l, "k6_custom_gauge ") {
			findings = append(findings, l)
		}
	}
	if len(findings) > 0 {
		t.Errorf("promtool check metrics (%v):\n%s", err, strings.Join(findings, "\n"))
	}
}

func gatherFamily(t *testing.T, s *Server, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := s.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

func TestLabels(t *testing.T) {
	for _, c := range []struct {
		name    string
		allow   []string
		present []string
		absent  []string
	}{
		{"default tag set", nil, []string{"testid", "scenario", "name", "method", "status", "expected_response", "group"}, []string{"url", "proto"}},
		{"url allowed", []string{"url"}, []string{"url", "name"}, []string{"proto"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := goldenServer(t, Config{AllowTags: c.allow})
			mf := gatherFamily(t, s, "k6_http_reqs_total")
			var names []string
			for _, lp := range mf.GetMetric()[0].GetLabel() {
				names = append(names, lp.GetName())
			}
			for _, l := range c.present {
				if !slices.Contains(names, l) {
					t.Errorf("label %s missing from %v", l, names)
				}
			}
			for _, l := range c.absent {
				if slices.Contains(names, l) {
					t.Errorf("label %s present in %v", l, names)
				}
			}
		})
	}
	if _, err := New(Config{AllowTags: []string{"bad-name"}}); err == nil {
		t.Error("an invalid label name was allowed")
	}
}

func TestSeriesLimit(t *testing.T) {
	s, err := New(Config{SeriesLimit: 3, DisableExporterMetrics: true, AllowTags: []string{"url"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: map[string]string{"url": strings.Repeat("x", i+1)}})
	}
	// Known series keep counting after the limit is reached.
	s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: map[string]string{"url": "x"}})
	if got := testutil.ToFloat64(s.overflow.WithLabelValues(OverflowSeries)); got != 7 {
		t.Errorf("overflow = %v, want 7", got)
	}
	mf := gatherFamily(t, s, "k6_http_reqs_total")
	total := 0.0
	for _, m := range mf.GetMetric() {
		total += m.GetCounter().GetValue()
	}
	if len(mf.GetMetric()) != 3 || total != 4 {
		t.Errorf("%d series totalling %v, want 3 totalling 4", len(mf.GetMetric()), total)
	}
}

// Bad NDJSON lines are counted by reason and skipped; good lines around
// them still count.
func TestBadLines(t *testing.T) {
	s, err := New(Config{DisableExporterMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{
		`{"type":"Metric","data":{"name":"http_reqs","type":"counter","contains":"default"},"metric":"http_reqs"}`,
		`{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{}}}`,
		`{"metric":"http_reqs","type":"Point","data":{"time":`,
		`not json at all`,
		`{"metric":"mystery","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{}}}`,
		``,
		`{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-30T08:51:05Z","value":1,"tags":{}}}`,
	}, "\n")
	n, err := s.replayReader("bad.ndjson", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 { // two http_reqs points and the unknown one were parsed
		t.Errorf("points = %d, want 3", n)
	}
	if got := testutil.ToFloat64(s.bad.WithLabelValues(SourceResults, "malformed")); got != 2 {
		t.Errorf("malformed = %v, want 2", got)
	}
	if got := testutil.ToFloat64(s.bad.WithLabelValues(SourceResults, "unknown_metric")); got != 1 {
		t.Errorf("unknown_metric = %v, want 1", got)
	}
	// Values Go code hands over are checked too: NaN would poison a sum.
	s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: math.NaN()})
	if got := testutil.ToFloat64(s.bad.WithLabelValues(SourceAPI, "bad_value")); got != 1 {
		t.Errorf("bad_value = %v, want 1", got)
	}
	mf := gatherFamily(t, s, "k6_http_reqs_total")
	if v := mf.GetMetric()[0].GetCounter().GetValue(); v != 2 {
		t.Errorf("k6_http_reqs_total = %v, want 2", v)
	}
}

func TestBuckets(t *testing.T) {
	env := testEnvelope()
	for _, c := range []struct {
		metric   string
		contains k6.ValueType
		want     []float64 // must be present
		absent   []float64
	}{
		// Overall bands and the tag-selected endpoint band, with the alert
		// thresholds (max * 1.1).
		{"http_req_duration", k6.Time, []float64{0.3577, 0.4053, 0.44583, 0.9227, 0.9372, 0.1, 0.12, 0.132}, []float64{0.015}},
		{"actor_get", k6.Time, []float64{0.012, 0.015, 0.0165, 0.03, 0.0415}, []float64{0.4053}},
		{"iteration_duration", k6.Time, timeBuckets, []float64{0.4053}},
		{"response_size", k6.Data, dataBuckets, nil},
	} {
		got := classicBuckets([]*envelope.Envelope{env}, c.metric, c.contains)
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("%s: not sorted and unique: %v", c.metric, got)
		}
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: %v missing from %v", c.metric, w, got)
			}
		}
		for _, a := range c.absent {
			if slices.Contains(got, a) {
				t.Errorf("%s: %v should not be in %v", c.metric, a, got)
			}
		}
	}
}

// Native bucket index: bucket i holds (2^((i-1)/128), 2^(i/128)].
func TestNativeIndex(t *testing.T) {
	for _, v := range []float64{1, 2, 0.5, 1.5, 0.0001, 0.4053, 3.7, 1e6, math.Nextafter(1, 2), math.Nextafter(1, 0)} {
		i := nativeIndex(v)
		lo := math.Exp2(float64(i-1) / 128)
		hi := math.Exp2(float64(i) / 128)
		if !(v > lo*(1-1e-15) && v <= hi*(1+1e-15)) {
			t.Errorf("v=%v: index %d covers (%v, %v]", v, i, lo, hi)
		}
	}
	if nativeIndex(1) != 0 || nativeIndex(2) != 128 || nativeIndex(0.5) != -128 {
		t.Errorf("powers of two: %d %d %d", nativeIndex(1), nativeIndex(2), nativeIndex(0.5))
	}
}

// Spans and deltas decode back to the dense counts.
func TestSpans(t *testing.T) {
	h := newHist(nil, fixedTime, nil)
	vals := map[float64]uint64{1: 3, 1.01: 1, 1.03: 2, 4: 5, -2: 1, 0: 4}
	for v, n := range vals {
		h.observe(v, n, float64(n)*v)
	}
	var out dto.Histogram
	h.write(&out, nil)
	decode := func(spans []*dto.BucketSpan, deltas []int64) map[int32]uint64 {
		m := map[int32]uint64{}
		idx, cur, d := int32(0), int64(0), 0
		for _, sp := range spans {
			idx += sp.GetOffset()
			for range sp.GetLength() {
				cur += deltas[d]
				d++
				if cur != 0 {
					m[idx] = uint64(cur)
				}
				idx++
			}
		}
		return m
	}
	pos := decode(out.GetPositiveSpan(), out.GetPositiveDelta())
	neg := decode(out.GetNegativeSpan(), out.GetNegativeDelta())
	want := map[int32]uint64{}
	for v, n := range vals {
		if v > 0 {
			want[nativeIndex(v)] += n
		}
	}
	if len(pos) != len(want) {
		t.Errorf("positive buckets %v, want %v", pos, want)
	}
	for k, v := range want {
		if pos[k] != v {
			t.Errorf("bucket %d = %d, want %d", k, pos[k], v)
		}
	}
	if neg[nativeIndex(2)] != 1 || out.GetZeroCount() != 4 || out.GetSampleCount() != 16 {
		t.Errorf("neg %v zero %d count %d", neg, out.GetZeroCount(), out.GetSampleCount())
	}
	if out.GetSchema() != NativeSchema {
		t.Errorf("schema %d", out.GetSchema())
	}
}

// k6Collector serves the store's series through prometheus.Collector, so
// that a pedantic registry checks what the scrape path renders directly.
type k6Collector struct{ st *store }

func (c *k6Collector) Describe(chan<- *prometheus.Desc) {}

func (c *k6Collector) Collect(ch chan<- prometheus.Metric) { c.st.collect(ch) }

// The scrape path (families rendered straight from the store) and the
// Collector path (checked by the pedantic registry) give the same text.
func TestGathererMatchesCollector(t *testing.T) {
	s := goldenServer(t, Config{})
	if _, err := s.ReplayFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&k6Collector{st: s.st})
	fast := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return s.st.gather(), nil })
	got, want := render(t, fast), render(t, reg)
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("scrape path differs from the collector path at line %d:\n%s\n%s", i+1, gl[i], wl[i])
			}
		}
		t.Errorf("scrape path has %d lines, collector path %d", len(gl), len(wl))
	}
}

// k6's built-ins are typed from k6's one list without a Metric line:
// a browser web vital is a time trend, the layout-shift score a unitless
// one, browser bytes a data counter.
func TestBuiltinsTypedWithoutMetricLine(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		metric string
		value  float64
		family string
	}{
		{"browser_web_vital_lcp", 1200, "k6_browser_web_vital_lcp_seconds"},
		{"browser_web_vital_cls", 0.1, "k6_browser_web_vital_cls"},
		{"browser_data_received", 512, "k6_browser_data_received_bytes_total"},
		{"grpc_req_duration", 12, "k6_grpc_req_duration_seconds"},
	} {
		s.IngestPoint(&k6.Point{Metric: c.metric, Value: c.value, Tags: map[string]string{"testid": "b"}})
		if gatherFamily(t, s, c.family) == nil {
			t.Errorf("%s: no family %s", c.metric, c.family)
		}
	}
	if got := testutil.ToFloat64(s.bad.WithLabelValues(SourceAPI, "unknown_metric")); got != 0 {
		t.Errorf("unknown_metric = %v, want 0", got)
	}
}
