package dashboards

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/promproc"
	"github.com/envelope-dev/envelope/internal/promtest"
	"github.com/envelope-dev/envelope/internal/rules"
)

// e2eEnvelope bands the fixture run (runA-out.ndjson of the top-level testdata, a real k6
// v2.2.0 run): the overall bands, the "home" endpoint by the k6 name tag,
// and the custom trend custom_waiting_time, so every band query has a
// gauge to read.
func e2eEnvelope() *envelope.Envelope {
	band := func(lo, hi float64) envelope.Band { return envelope.Band{Min: lo, Max: hi, N: 3} }
	tol := figures.DefaultTolerance()
	tol.MaxCV = 0.05
	return &envelope.Envelope{
		APIVersion: envelope.APIVersion, Kind: envelope.Kind, Name: "e2e",
		Throughput:           envelope.Spread{N: 3, Mean: 10, Min: 9, Max: 11, StdDev: 1, CV: 0.1},
		Iterations:           envelope.Spread{N: 3, Mean: 6, Min: 5, Max: 7, StdDev: 1, CV: 0.15},
		RequestsPerIteration: envelope.Spread{N: 3, Mean: 1.7, Min: 1.6, Max: 1.8},
		Latency: envelope.Latency{
			Avg: band(2, 4), Median: band(1, 3), P95: band(4, 8), P99: band(8, 16), Max: band(20, 40),
		},
		Errors: envelope.Errors{Total: 384},
		Endpoints: map[string]envelope.Endpoint{
			"home": {Tag: "name", Value: "home",
				Avg: band(1, 3), Median: band(1, 2), P95: band(3, 6), P99: band(6, 12), Max: band(10, 20), Share: 0.9},
			"custom_waiting_time": {Metric: "custom_waiting_time",
				Avg: band(1, 3), Median: band(1, 2), P95: band(3, 6), P99: band(6, 12), Max: band(10, 20), Share: 0.1},
		},
		Saturation: envelope.Saturation{BelowSaturation: true, Verdict: "below saturation"},
		Tolerance:  tol,
	}
}

// e2eSkip lists the queries that cannot return data in this environment
// and why; every other query of every dashboard must.
var e2eSkip = []struct {
	where  *regexp.Regexp
	reason string
}{
	{regexp.MustCompile(`^ecs\.json `), "no ECS task metadata or CloudWatch outside ECS: the ECS rows stay empty by design"},
	{regexp.MustCompile(`"(ECS metadata up|CloudWatch up)"`), "ECS and CloudWatch collectors are off outside ECS"},
	{regexp.MustCompile(`"Firing envelope alerts"|annotation "Envelope alerts"`), "a baseline-like run fires no alert"},
	{regexp.MustCompile(`"Per-stage statistics"`), "needs requests tagged with a stage (k6-jslib-utils), which the fixture run is not"},
	{regexp.MustCompile(`"Ingest lag"`), "lag is measured for live inputs only; the test replays a finished file"},
}

func skipReason(where string) string {
	for _, s := range e2eSkip {
		if s.where.MatchString(where) {
			return s.reason
		}
	}
	return ""
}

// TestEndToEnd: a real Prometheus scrapes the exporter replaying a real
// k6 run, with the generated rules loaded; every panel query of every
// dashboard must then return data.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	env := e2eEnvelope()

	// The rules generator, as `envelope rules` writes them;
	// groups evaluated every second instead of 15s to keep the test short.
	rf, _, err := rules.Generate(env, rules.DefaultOptions())
	if err != nil {
		t.Fatalf("generating rules: %v", err)
	}
	for i := range rf.Groups {
		rf.Groups[i].Interval = "1s"
	}
	rb, err := rules.Marshal(env, rf)
	if err != nil {
		t.Fatal(err)
	}

	srv, err := exporter.New(exporter.Config{Envelope: env})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	target := strings.TrimPrefix(ts.URL, "http://")

	pr := promtest.Start(t, promtest.Options{
		Config: fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
  scrape_native_histograms: true
  always_scrape_classic_histograms: true
rule_files: [rules.yaml]
scrape_configs:
  - job_name: envelope-exporter
    static_configs:
      - targets: [%q]
`, target),
		Files: map[string][]byte{"rules.yaml": rb},
		Ready: 3 * time.Minute,
	})
	prom := pr.URL

	// Exercise the inputs whose self-metrics the health dashboard shows:
	// a rejected OTLP push (wrong content type) and, in the replay below,
	// one malformed line.
	if r, err := http.Post(ts.URL+"/v1/metrics", "text/plain", strings.NewReader("x")); err == nil {
		_ = r.Body.Close()
	}
	// And a real k6 OTLP export with k6's default explicit buckets, whose
	// streams the coarse-quantile annotation and panel show.
	otlpBody, err := os.ReadFile(fixtures.Path(t, "k6/baseline-mix-v2.2.0/otlp-sample-otlp/otlp-001.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := http.Post(ts.URL+"/v1/metrics", "application/x-protobuf", bytes.NewReader(otlpBody)); err != nil {
		t.Fatal(err)
	} else if _ = r.Body.Close(); r.StatusCode != http.StatusOK {
		t.Fatalf("OTLP export: status %d", r.StatusCode)
	}
	// Start once Prometheus scrapes the exporter, so every chunk lands in
	// its own scrape and the run spans about twenty seconds of samples:
	// the Runs table's active-time query compares the counter with itself
	// 5s earlier at 5s-aligned steps, and a loaded machine delaying a few
	// scrapes must still leave several such steps inside the run.
	waitFor(t, time.Minute, "first scrape of the exporter", func() bool {
		n, _ := promQuery(prom, `up{job="envelope-exporter"} == 1`)
		return n > 0
	})
	replayInChunks(t, srv, fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"), 20)

	// Rates need two scrapes after the last chunk, recorded series a rule
	// evaluation after that.
	waitFor(t, time.Minute, "recording rules evaluated", func() bool {
		n, _ := promQuery(prom, catalogue.RecThroughputVsEnvelope)
		return n > 0
	})

	ds, err := Build(Options{Envelope: env})
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{
		"__rate_interval": "10s", "__range": "5m", "__interval": "1s",
		"testid": ".*", "scenario": ".*", "endpoint": ".*", "envelope": env.Name,
		"trend": catalogue.SeriesName("custom_waiting_time", "trend", "time"),
	}
	checked, skipped := 0, 0
	for _, d := range ds {
		b, _ := d.JSON()
		var m model
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, q := range queries(d.File, m) {
			if reason := skipReason(q.where); reason != "" {
				skipped++
				continue
			}
			expr := Substitute(q.expr, vals)
			n, err := promQuery(prom, expr)
			if err != nil {
				t.Errorf("%s: %v\n%s", q.where, err, expr)
				continue
			}
			if n == 0 {
				t.Errorf("%s: no data\n%s", q.where, expr)
			}
			checked++
		}
	}
	t.Logf("%d queries returned data, %d skipped by e2eSkip", checked, skipped)
	if checked < 60 {
		t.Errorf("only %d queries checked", checked)
	}
}

// replayInChunks feeds the run to the exporter in n parts a second apart,
// so Prometheus sees counters grow across several scrapes as it would
// live. Metric definition lines go with every chunk (they are
// idempotent). The test also adds what k6 writes when an arrival-rate
// executor drops iterations, which this run did not, and one bad line.
func replayInChunks(t *testing.T, srv *exporter.Server, path string, n int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // only read
	var defs, points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, `"type":"Metric"`) {
			defs = append(defs, l)
		} else {
			points = append(points, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	defs = append(defs, `{"type":"Metric","data":{"name":"dropped_iterations","type":"counter","contains":"default","thresholds":[],"submetrics":null},"metric":"dropped_iterations"}`)
	for i := range n {
		var buf bytes.Buffer
		for _, l := range defs {
			buf.WriteString(l + "\n")
		}
		for _, l := range points[i*len(points)/n : (i+1)*len(points)/n] {
			buf.WriteString(l + "\n")
		}
		fmt.Fprintf(&buf, `{"metric":"dropped_iterations","type":"Point","data":{"time":"2026-11-30T08:51:%02d.000000000Z","value":1,"tags":{"scenario":"arrival"}}}`+"\n", 5+i)
		if i == 0 {
			buf.WriteString("{not k6\n")
		}
		chunk := filepath.Join(t.TempDir(), fmt.Sprintf("chunk-%d.ndjson", i))
		if err := os.WriteFile(chunk, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.ReplayFile(chunk); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
}

// promQuery runs an instant query and returns the number of results.
func promQuery(base, expr string) (int, error) {
	samples, err := promproc.Query(context.Background(), base, expr, time.Time{})
	return len(samples), err
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
