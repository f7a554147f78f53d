package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

func demoRuns(n int) []string {
	var files []string
	for i := 1; i <= n; i++ {
		files = append(files, filepath.Join("..", "..", "internal", "demo", "runs", "run-"+string(rune('0'+i))+".json"))
	}
	return files
}

func TestBaselineCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "envelope.json")
	code, so, se := cmdlinetest.Capture(runCLI, append([]string{"baseline", "--name", "t", "--format", "json", "--out", out}, demoRuns(5)...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	if !strings.Contains(so, "throughput: mean 56.1 req/s, 55.97–56.28 req/s across 5 runs, CV 0.24%") {
		t.Errorf("headline: %s", so)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Throughput struct{ CV float64 }
		Errors     struct{ Total int64 }
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Errors.Total != 101882 || m.Throughput.CV < 0.0023 || m.Throughput.CV > 0.0025 {
		t.Errorf("json: %+v", m)
	}

	// A run at other VUs is refused, naming the difference.
	src, err := os.ReadFile(demoRuns(2)[1])
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, bytes.Replace(src, []byte(`"vus_max": {
            "value": 50,
            "min": 50,
            "max": 50`), []byte(`"vus_max": {
            "value": 100,
            "min": 100,
            "max": 100`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, se = cmdlinetest.Capture(runCLI, "baseline", "--out", filepath.Join(dir, "x.yaml"), demoRuns(1)[0], other)
	if code == 0 || !strings.Contains(se, "VUs:") || !strings.Contains(se, "has 100") {
		t.Errorf("differing VUs: exit %d, stderr %q", code, se)
	}
	code, _, se = cmdlinetest.Capture(runCLI, "baseline", "--force", "--out", filepath.Join(dir, "x.yaml"), demoRuns(1)[0], other)
	if code != 0 || !strings.Contains(se, "accepted with --force") {
		t.Errorf("--force: exit %d, stderr %q", code, se)
	}
}

// A bad --match is refused before any run is read; an envelope's match
// reaches every rule `envelope rules` writes.
func TestBaselineMatch(t *testing.T) {
	dir := t.TempDir()
	code, _, se := cmdlinetest.Capture(runCLI, append([]string{"baseline", "--match", `envelope=checkout`, "--out", filepath.Join(dir, "bad.yaml")}, demoRuns(1)...)...)
	if code != 2 || !strings.Contains(se, "--match") || !strings.Contains(se, "not a list of PromQL label matchers") {
		t.Errorf("bad match: exit %d, stderr %q", code, se)
	}

	in, err := figures.ReadFiles(demoRuns(3), figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compute(in, envelope.Options{Name: "checkout-50vu", Match: `envelope="checkout-50vu", testid=~"nightly-.*"`})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "envelope.yaml")
	if err := envelope.WriteFile(out, env, envelope.YAML); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `match: envelope="checkout-50vu", testid=~"nightly-.*"`) {
		t.Errorf("envelope lacks the match:\n%s", b)
	}
	rulesDir := filepath.Join(dir, "rules")
	if code, _, se := cmdlinetest.Capture(runCLI, "rules", "--envelope", out, "--out", rulesDir, "--format", "prometheus"); code != 0 {
		t.Fatalf("rules: exit %d: %s", code, se)
	}
	rb, err := os.ReadFile(filepath.Join(rulesDir, "envelope.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rb), `k6_http_reqs_total{envelope="checkout-50vu", testid=~"nightly-.*"}`) || !strings.Contains(string(rb), "name: envelope-checkout-50vu-k6-alerts") {
		t.Errorf("rules do not select with the match or name the envelope")
	}
}
