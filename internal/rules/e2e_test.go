package rules_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/promproc"
	"github.com/envelope-dev/envelope/internal/promtest"
	"github.com/envelope-dev/envelope/internal/rules"
	"github.com/envelope-dev/envelope/internal/simulate"
)

// End to end: the exporter replays a simulated run with failed requests,
// a real Prometheus (go tool prometheus) scrapes it with the generated
// rules loaded, and K6EnvelopeRequestsFailing reaches firing in the HTTP
// API while K6EnvelopeExporterDown stays quiet. Only the timing is scaled
// for the test (1s scrape and evaluation, for: 5s except the exporter-down
// alert); the expressions are the generated ones.
func TestEndToEndPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the exporter and a real Prometheus")
	}
	env, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := rules.DefaultOptions()
	o.Interval = "1s"
	f, _, err := rules.Generate(env, o)
	if err != nil {
		t.Fatal(err)
	}
	for gi := range f.Groups {
		for ri := range f.Groups[gi].Rules {
			// The exporter-down alert keeps its 1m: Prometheus takes ~5s
			// after start to scrape any target.
			if r := f.Groups[gi].Rules[ri]; r.For != "" && r.Alert != rules.AlertExporterDown {
				f.Groups[gi].Rules[ri].For = "5s"
			}
		}
	}
	rb, err := rules.Marshal(env, f)
	if err != nil {
		t.Fatal(err)
	}

	run := filepath.Join(dir, "regressed.ndjson.gz")
	if err := simulate.WriteFile(run, env, simulate.Options{Duration: time.Minute, Seed: 21, ErrorRate: 0.01, TestID: "e2e"}); err != nil {
		t.Fatal(err)
	}
	srv, err := exporter.New(exporter.Config{Envelope: env, DisableExporterMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.ReplayFile(run); err != nil {
		t.Fatal(err)
	}
	srv.SetReady(true)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Serve(ctx, l) }() // stops with ctx; a failed start shows as no scraped series below

	deadline := time.Now().Add(4 * time.Minute) // includes Prometheus's start
	prom := promtest.Start(t, promtest.Options{
		Config: fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yaml]
scrape_configs:
  - job_name: envelope-exporter
    static_configs:
      - targets: [%q]
`, l.Addr().String()),
		Files: map[string][]byte{"rules.yaml": rb},
		Ready: 4 * time.Minute,
	})

	var alerts []promproc.Alert
	for {
		if time.Now().After(deadline) {
			t.Fatalf("K6EnvelopeRequestsFailing never fired; last alerts %+v", alerts)
		}
		time.Sleep(time.Second)
		got, err := prom.Alerts()
		if err != nil {
			continue
		}
		alerts = got
		firing := false
		for _, a := range alerts {
			if a.Labels["alertname"] == rules.AlertExporterDown && a.State == "firing" {
				t.Fatalf("exporter reported down: %+v", a)
			}
			if a.Labels["alertname"] == rules.AlertRequestsFailing && a.State == "firing" && a.Labels["testid"] == "e2e" {
				firing = true
			}
		}
		if firing {
			return
		}
	}
}
