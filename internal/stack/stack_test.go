package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/promproc"
	"github.com/envelope-dev/envelope/internal/promtest"
	"github.com/envelope-dev/envelope/internal/simulate"
)

func TestPromDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second:             "1s",
		15 * time.Second:        "15s",
		2 * time.Minute:         "2m",
		1500 * time.Millisecond: "1500ms",
		90 * time.Second:        "90s",
	} {
		if got := promDuration(d); got != want {
			t.Errorf("promDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// The stack's Prometheus config has the compose config's settings (native
// histograms over protobuf, classic buckets kept) and jobs, and promtool
// accepts it.
func TestPrometheusConfig(t *testing.T) {
	cfg := PrometheusConfig{
		RuleFiles:     []string{"rules/envelope.rules.yaml"},
		Alertmanagers: []string{"127.0.0.1:9093"},
		Jobs: []Job{
			{Name: ExporterJob, Groups: []TargetGroup{
				{Targets: []string{"127.0.0.1:19466"}},
				{Targets: []string{"127.0.0.1:19467", "127.0.0.1:19468"}, Labels: map[string]string{"testid": "x"}},
			}},
			{Name: "prometheus", Interval: 30 * time.Second, Groups: []TargetGroup{{Targets: []string{"127.0.0.1:9090"}}}},
		},
	}
	b, err := cfg.YAML()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// Same global settings as the compose stack's config.
	compose, err := os.ReadFile("../../deploy/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(compose, &want); err != nil {
		t.Fatal(err)
	}
	g, w := got["global"].(map[string]any), want["global"].(map[string]any)
	for _, k := range []string{"scrape_native_histograms", "always_scrape_classic_histograms"} {
		if g[k] != w[k] || g[k] != true {
			t.Errorf("global.%s: stack %v, compose %v, want both true", k, g[k], w[k])
		}
	}
	jobs := func(m map[string]any) []string {
		var out []string
		for _, sc := range m["scrape_configs"].([]any) {
			out = append(out, sc.(map[string]any)["job_name"].(string))
		}
		return out
	}
	if j := jobs(want); j[0] != ExporterJob {
		t.Errorf("compose scrapes the exporter as job %q, the stack as %q", j[0], ExporterJob)
	}
	if j := jobs(got); len(j) != 2 || j[0] != ExporterJob {
		t.Errorf("stack jobs %v", j)
	}

	if _, err := (PrometheusConfig{Jobs: []Job{{Name: "x"}}}).YAML(); err == nil {
		t.Error("a job without targets: no error")
	}

	if testing.Short() {
		return
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile("../../rules/envelope.rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules", "envelope.rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := promtest.Promtool(t, "check", "config", "--lint=all", "--lint-fatal", filepath.Join(dir, "prometheus.yml")); err != nil || !bytes.Contains(out, []byte("SUCCESS")) {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}

// Replay paces nothing at a very high speed and ingests every point;
// the exporter's request counter then holds the run's request count.
func TestReplay(t *testing.T) {
	srv, err := exporter.New(exporter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const file = "testdata/baseline-a-120s.ndjson.gz"
	n, err := Replay(context.Background(), srv, file, 1e6, false)
	if err != nil {
		t.Fatal(err)
	}
	points := countPoints(t, file)
	if n != points {
		t.Errorf("replayed %d points, file has %d", n, points)
	}
	if _, err := Replay(context.Background(), srv, file, 0, false); err == nil {
		t.Error("speed 0: no error")
	}
	if _, err := Replay(context.Background(), srv, "testdata/missing.ndjson", 1, false); err == nil {
		t.Error("missing file: no error")
	}
	// Cancelled mid-way at real speed: returns promptly without error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Replay(ctx, srv, file, 1, true); err != nil {
		t.Errorf("cancelled replay: %v", err)
	}
}

// countPoints counts the Point lines of a gzip NDJSON file.
func countPoints(t *testing.T, path string) int {
	t.Helper()
	sc := bufio.NewScanner(fixtures.Open(t, path))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	n := 0
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"type":"Point"`)) {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// The stack end to end: an exporter replaying two runs, Prometheus
// loading the committed rules, scraping it and recording throughput, and
// Alertmanager receiving the alert the rules raise for the run whose
// requests fail (and none for the clean run); Close stops everything.
func TestStackEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Prometheus and Alertmanager")
	}
	ctx := context.Background()
	// The pinned Prometheus and Alertmanager (the tool directives of
	// go.mod and tools/alertmanager/go.mod), never ones on $PATH.
	bin, err := promproc.GoTool(ctx, "prometheus")
	if err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	amBin, err := promproc.GoTool(ctx, "alertmanager")
	if err != nil {
		t.Fatalf("alertmanager: %v", err)
	}
	rules, err := os.ReadFile("../../rules/envelope.rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Evaluate every second rather than every 15 s, and fire after 1 s
	// rather than 1 min: a shorter test.
	rules = bytes.ReplaceAll(rules, []byte("interval: 15s"), []byte("interval: 1s"))
	rules = bytes.ReplaceAll(rules, []byte("for: 1m"), []byte("for: 1s"))
	failing := failingRun(t)
	srv, err := exporter.New(exporter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Start(ctx, Options{
		Dir:                t.TempDir(),
		Exporters:          []Target{{Server: srv}},
		PrometheusBin:      bin,
		AlertmanagerBin:    amBin,
		Rules:              map[string][]byte{"envelope.rules.yaml": rules},
		ScrapeInterval:     time.Second,
		EvaluationInterval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close() //nolint:errcheck // test cleanup
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Stopped by cancel; the recorded throughput and the alert below
	// show they ran.
	go func() { _, _ = Replay(rctx, srv, "testdata/baseline-a-120s.ndjson.gz", 8, true) }()
	go func() { _, _ = Replay(rctx, srv, failing, 1, true) }()

	// Wait for a recorded throughput of the run's testid.
	var got []Sample
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		got, err = Query(ctx, st.PrometheusURL, `testid:k6_http_reqs:rate1m{testid="baseline-a"}`, time.Time{})
		if err == nil && len(got) == 1 && got[0].Value > 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(got) != 1 || got[0].Value <= 0 {
		t.Fatalf("no recorded throughput for baseline-a: %v %v", got, err)
	}
	up, err := Query(ctx, st.PrometheusURL, `up{job="`+ExporterJob+`"}`, time.Time{})
	if err != nil || len(up) != 1 || up[0].Value != 1 {
		t.Errorf("up of the exporter job: %v %v", up, err)
	}
	// Native histograms arrived over protobuf: the histogram count of the
	// request duration is a native sample.
	nh, err := Query(ctx, st.PrometheusURL, `histogram_count(sum(k6_http_req_duration_seconds))`, time.Time{})
	if err != nil || len(nh) != 1 || nh[0].Value <= 0 {
		t.Errorf("native histogram: %v %v", nh, err)
	}
	// Prometheus discovered the stack's Alertmanager.
	var active []string
	for i := 0; i < 50 && len(active) == 0; i++ {
		active = alertmanagers(t, st.PrometheusURL)
		time.Sleep(200 * time.Millisecond)
	}
	if len(active) != 1 || !strings.HasPrefix(active[0], st.AlertmanagerURL) {
		t.Errorf("Prometheus sends alerts to %v, want %s", active, st.AlertmanagerURL)
	}
	// The failing run's alert reaches Alertmanager, with the labels its
	// routing groups by; the clean run raises none.
	var failingAlerts []map[string]string
	deadline = time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && len(failingAlerts) == 0 {
		time.Sleep(500 * time.Millisecond)
		failingAlerts = nil
		for _, a := range alertmanagerAlerts(t, st.AlertmanagerURL) {
			if a["alertname"] == "K6EnvelopeRequestsFailing" {
				failingAlerts = append(failingAlerts, a)
			}
		}
	}
	if len(failingAlerts) != 1 || failingAlerts[0]["testid"] != failingTestID || failingAlerts[0]["severity"] != "critical" {
		t.Errorf("Alertmanager's K6EnvelopeRequestsFailing alerts: %v, want one for testid %s, severity critical", failingAlerts, failingTestID)
	}
	if _, err := Query(ctx, st.PrometheusURL, `sum(`, time.Time{}); err == nil {
		t.Error("bad query: no error")
	}
	if err := st.Close(); err != nil {
		t.Error(err)
	}
	if _, err := Query(ctx, st.PrometheusURL, "up", time.Time{}); err == nil {
		t.Error("Prometheus still answers after Close")
	}
}

// failingTestID is the testid of failingRun's run.
const failingTestID = "stack-failing"

// failingRun writes a 1-minute simulated run of the demo envelope in
// which 5% of requests fail, and returns its path.
func failingRun(t *testing.T) string {
	t.Helper()
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "failing.ndjson.gz")
	err = simulate.WriteFile(path, env, simulate.Options{
		Duration: time.Minute, Seed: 1, TestID: failingTestID, ErrorRate: 0.05, ThroughputFactor: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// alertmanagerAlerts returns the label sets of the alerts an Alertmanager
// holds (its v2 API).
func alertmanagerAlerts(t *testing.T, am string) []map[string]string {
	t.Helper()
	resp, err := http.Get(am + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck // response body, only read
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s/api/v2/alerts: %s", am, resp.Status)
	}
	var alerts []struct {
		Labels map[string]string `json:"labels"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatal(err)
	}
	out := make([]map[string]string, len(alerts))
	for i, a := range alerts {
		out[i] = a.Labels
	}
	return out
}

// alertmanagers lists the Alertmanager URLs Prometheus sends alerts to.
func alertmanagers(t *testing.T, prom string) []string {
	t.Helper()
	resp, err := http.Get(prom + "/api/v1/alertmanagers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck // response body, only read
	var r struct {
		Data struct {
			Active []struct {
				URL string `json:"url"`
			} `json:"activeAlertmanagers"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range r.Data.Active {
		out = append(out, a.URL)
	}
	return out
}

// The stack's Alertmanager config routes to a defined receiver, and the
// module's amtool accepts it and deploy/'s.
func TestAlertmanagerConfig(t *testing.T) {
	var c struct {
		Route struct {
			Receiver string `yaml:"receiver"`
		} `yaml:"route"`
		Receivers []struct {
			Name string `yaml:"name"`
		} `yaml:"receivers"`
	}
	if err := yaml.Unmarshal([]byte(AlertmanagerConfig), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Receivers) == 0 || c.Route.Receiver != c.Receivers[0].Name {
		t.Errorf("route receiver %q, receivers %v", c.Route.Receiver, c.Receivers)
	}
	if testing.Short() {
		return // without building amtool
	}
	f := filepath.Join(t.TempDir(), "alertmanager.yml")
	if err := os.WriteFile(f, []byte(AlertmanagerConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := promproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// Every Alertmanager config the project ships: the stack's, and the
	// one deploy/ gives compose and Kubernetes.
	for _, cfg := range []string{f, filepath.Join(root, "deploy", "alertmanager", "alertmanager.yml")} {
		out, err := promtest.Tool(t, "amtool", "check-config", cfg)
		if err != nil {
			t.Errorf("%v\n%s", err, out)
		} else if !bytes.Contains(out, []byte("SUCCESS")) {
			t.Errorf("amtool check-config %s: no SUCCESS in\n%s", cfg, out)
		}
	}
}
