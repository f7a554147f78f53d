package exporter

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/promtest"
)

// exactFigures reads a k6 NDJSON file independently of the exporter: the
// request count and the http_req_duration samples (ms).
func exactFigures(t testing.TB, path string) (requests float64, durations []float64) {
	t.Helper()
	sc := bufio.NewScanner(fixtures.Open(t, path))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Type   string
			Metric string
			Data   struct{ Value float64 }
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Type != "Point" {
			continue
		}
		switch line.Metric {
		case "http_reqs":
			requests += line.Data.Value
		case "http_req_duration":
			durations = append(durations, line.Data.Value)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(durations)
	return requests, durations
}

// k6Percentile is k6's formula: linear interpolation at rank p*(n-1).
func k6Percentile(sorted []float64, p float64) float64 {
	rank := p * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (rank-float64(lo))*(sorted[lo+1]-sorted[lo])
}

func freePort(t *testing.T) int {
	t.Helper()
	l := listenLoopback(t)
	defer l.Close() //nolint:errcheck // test cleanup
	return l.Addr().(*net.TCPAddr).Port
}

// promQuery runs an instant query and returns the single value of the
// result vector (or scalar); ok is false unless there is exactly one.
func promQuery(t *testing.T, prom *promtest.Prometheus, q string) (float64, bool) {
	t.Helper()
	samples, err := prom.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 1 {
		return 0, false
	}
	return samples[0].Value, true
}

// TestPrometheusEndToEnd replays a real k6 run into the exporter, lets a
// real Prometheus 3 scrape it (native histograms over protobuf, classic
// buckets kept, created timestamps ingested as zero samples so increase()
// counts from the start), and checks the figures against the exact ones.
func TestPrometheusEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	fixture := fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-a.ndjson.gz")
	requests, durs := exactFigures(t, fixture)
	p95, p99 := k6Percentile(durs, 0.95), k6Percentile(durs, 0.99)
	// An envelope whose p95 band ends at a value inside the data, so the
	// band bucket holds a non-trivial count.
	env := &envelope.Envelope{Name: "e2e",
		Latency:   envelope.Latency{P95: envelope.Band{Min: math.Round(p95*0.9*10) / 10, Max: math.Round(p95*10) / 10, N: 3}},
		Tolerance: figures.Tolerance{LatencyRise: 0.1}}
	srv, err := New(Config{Envelope: env, DisableExporterMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.ReplayFile(fixture); err != nil {
		t.Fatal(err)
	}
	exp := httptest.NewServer(srv.Handler())
	defer exp.Close()

	// Native histograms over protobuf with classic buckets kept, created
	// timestamps ingested as zero samples.
	deadline := time.Now().Add(60 * time.Second)
	prom := promtest.Start(t, promtest.Options{
		Config: fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: envelope
    scrape_native_histograms: true
    always_scrape_classic_histograms: true
    static_configs:
      - targets: [%q]
`, strings.TrimPrefix(exp.URL, "http://")),
		Flags: []string{"--enable-feature=created-timestamp-zero-ingestion"},
		Ready: 60 * time.Second,
	})
	// Wait for three scrapes of the target.
	for {
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not scrape the exporter in time")
		}
		time.Sleep(500 * time.Millisecond)
		if n, ok := promQuery(t, prom, `count_over_time(up{job="envelope"}[1m])`); ok && n >= 3 {
			break
		}
	}
	if up, _ := promQuery(t, prom, `up{job="envelope"}`); up != 1 {
		t.Fatalf("up = %v", up)
	}

	check := func(name, q string, want, relTol float64) {
		t.Helper()
		got, ok := promQuery(t, prom, q)
		if !ok {
			t.Errorf("%s: %s returned no single value", name, q)
			return
		}
		rel := math.Abs(got-want) / math.Abs(want)
		t.Logf("%-28s got %-14.6g want %-14.6g rel.err %.4f%%", name, got, want, 100*rel)
		if rel > relTol {
			t.Errorf("%s: %s = %v, want %v (±%.2f%%)", name, q, got, want, 100*relTol)
		}
	}
	// Counters: exact.
	check("requests (raw counter)", `sum(k6_http_reqs_total)`, requests, 0)
	check("increase (anchored)", `sum(increase(k6_http_reqs_total[5m] anchored))`, requests, 0)
	check("rate (anchored) x 300s", `sum(rate(k6_http_reqs_total[5m] anchored)) * 300`, requests, 1e-9)
	// Quantiles from the native histograms: within 1% of k6's own figure.
	check("native p95", `histogram_quantile(0.95, sum(rate(k6_http_req_duration_seconds[5m])))`, p95/1000, 0.01)
	check("native p99", `histogram_quantile(0.99, sum(rate(k6_http_req_duration_seconds[5m])))`, p99/1000, 0.01)
	check("native count", `histogram_count(sum(increase(k6_http_req_duration_seconds[5m] anchored)))`, float64(len(durs)), 1e-9)
	// The band bucket: requests at or below the band's upper edge, exact.
	edge := envelope.Seconds(env.Latency.P95.Max)
	atOrBelow := float64(0)
	for _, d := range durs {
		if d/1000 <= edge {
			atOrBelow++
		}
	}
	check("band bucket (le = p95 max)", fmt.Sprintf(`sum(k6_http_req_duration_seconds_bucket{le="%s"})`, strconv.FormatFloat(edge, 'g', -1, 64)), atOrBelow, 0)
	// Classic quantiles land between the bucket bounds around the exact value.
	got, ok := promQuery(t, prom, `histogram_quantile(0.95, sum by (le) (rate(k6_http_req_duration_seconds_bucket[5m])))`)
	bounds := classicBuckets([]*envelope.Envelope{env}, "http_req_duration", k6.Time)
	i, _ := slices.BinarySearch(bounds, p95/1000)
	lo, hi := 0.0, math.Inf(1)
	if i > 0 {
		lo = bounds[i-1]
	}
	if i < len(bounds) {
		hi = bounds[i]
	}
	t.Logf("classic p95 got %.6g, exact %.6g in (%g, %g]", got, p95/1000, lo, hi)
	if !ok || got < lo || got > hi {
		t.Errorf("classic p95 = %v, want within (%g, %g]", got, lo, hi)
	}
	// Envelope gauges are scraped too.
	check("envelope p95 max gauge", `envelope_latency_max_seconds{envelope="e2e",endpoint="",percentile="95"}`, edge, 1e-12)
}
