package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/rules"
)

// `envelope dashboards` writes the same files go generate commits.
func TestDashboardsCommand(t *testing.T) {
	dir := t.TempDir()
	code, so, se := cmdlinetest.Capture(runCLI, "dashboards", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	for _, f := range []string{"overview.json", "endpoints.json", "runs.json", "ecs.json", "exporter.json"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "dashboards", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the committed dashboards/%s", f, f)
		}
		if !strings.Contains(so, f) {
			t.Errorf("stdout does not list %s: %q", f, so)
		}
	}
}

// --envelope adds the thresholds of the alert rules generated from the
// envelope and its band edges; a bad path is a usage error naming the
// file.
func TestDashboardsCommandEnvelope(t *testing.T) {
	dir := t.TempDir()
	env := &envelope.Envelope{APIVersion: envelope.APIVersion, Kind: envelope.Kind, Name: "t",
		Throughput: envelope.Spread{N: 3, Mean: 56.1, Min: 55.97, Max: 56.28},
		Latency:    envelope.Latency{P95: envelope.Band{Min: 357.7, Max: 405.3, N: 3}, P99: envelope.Band{Min: 922.7, Max: 937.2, N: 3}},
		Errors:     envelope.Errors{Total: 20000},
		Tolerance:  figures.DefaultTolerance()}
	path := filepath.Join(dir, "envelope.json")
	b, err := envelope.Marshal(env, envelope.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if code, _, se := cmdlinetest.Capture(runCLI, "dashboards", "--envelope", path, "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	ov, err := os.ReadFile(filepath.Join(out, "overview.json"))
	if err != nil {
		t.Fatal(err)
	}
	cal, err := rules.Calibrate(env)
	if err != nil {
		t.Fatal(err)
	}
	p95, ok := cal.Latency[0], cal.Latency[0].Quantile == 0.95
	if !ok {
		t.Fatalf("first calibrated latency test is p%g", cal.Latency[0].Quantile*100)
	}
	for _, want := range []string{`"value": 0.4053`, `"value": 0.9372`, `"value": 55.97`,
		fmt.Sprintf(`"value": %v`, cal.Throughput.Floor), fmt.Sprintf(`"value": %v`, p95.Threshold)} {
		if !bytes.Contains(ov, []byte(want)) {
			t.Errorf("overview.json lacks threshold %s", want)
		}
	}

	code, _, se := cmdlinetest.Capture(runCLI, "dashboards", "--envelope", filepath.Join(dir, "missing.yaml"), "--out", out)
	if code != 2 || !strings.Contains(se, "missing.yaml") {
		t.Errorf("missing envelope: exit %d, stderr %q; want 2 naming the file", code, se)
	}
}
