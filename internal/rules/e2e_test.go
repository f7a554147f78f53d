package rules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/rules"
	"github.com/envelope-dev/envelope/internal/simulate"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

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
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rb, 0o644); err != nil {
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
	go srv.Serve(ctx, l)

	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yaml]
scrape_configs:
  - job_name: envelope-exporter
    static_configs:
      - targets: [%q]
`, l.Addr().String())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cmd := exec.Command("go", "tool", "prometheus",
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port),
		"--log.level=warn")
	cmd.Dir = filepath.Join("..", "..") // the module root holds the tool directive
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Stop the go command and the Prometheus it started (its own group).
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Log(logs.String())
		}
	}()

	type alert struct {
		Labels map[string]string `json:"labels"`
		State  string            `json:"state"`
	}
	var resp struct {
		Data struct {
			Alerts []alert `json:"alerts"`
		} `json:"data"`
	}
	deadline := time.Now().Add(4 * time.Minute) // includes the first build of Prometheus
	for {
		if time.Now().After(deadline) {
			t.Fatalf("K6EnvelopeRequestsFailing never fired; last alerts %+v", resp.Data.Alerts)
		}
		time.Sleep(time.Second)
		r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/alerts", port))
		if err != nil {
			continue
		}
		err = json.NewDecoder(r.Body).Decode(&resp)
		r.Body.Close()
		if err != nil {
			continue
		}
		firing := false
		for _, a := range resp.Data.Alerts {
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
