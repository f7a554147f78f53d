package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// cmpRun runs the CLI with stdout and stderr captured.
func cmpRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	return runCLI(args, &o, &e), o.String(), e.String()
}

func cmpDemoRun(i int) string {
	return filepath.Join("..", "..", "internal", "demo", "runs", "run-"+string(rune('0'+i))+".json")
}

// cmpSlowed writes a copy of a demo run with http_req_duration's p95
// and p99 scaled by f.
func cmpSlowed(t *testing.T, dir string, i int, f float64) string {
	t.Helper()
	b, err := os.ReadFile(cmpDemoRun(i))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// The demo runs are --summary-export files: flat stat keys.
	vals := doc["metrics"].(map[string]any)["http_req_duration"].(map[string]any)
	for _, k := range []string{"p(95)", "p(99)"} {
		if v, ok := vals[k].(float64); ok {
			vals[k] = v * f
		}
	}
	out, _ := json.Marshal(doc)
	path := filepath.Join(dir, "slow-"+string(rune('0'+i))+".json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// demoEnvelopeFile writes the demo's envelope into dir and returns its
// path.
func demoEnvelopeFile(t *testing.T, dir string) string {
	t.Helper()
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "envelope.yaml")
	if err := envelope.WriteFile(path, env, envelope.YAML); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCompareCommandExitCodes(t *testing.T) {
	dir := t.TempDir()
	envPath := demoEnvelopeFile(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stdout (code 0/1) or stderr (code 2)
	}{
		{"like for like", []string{"compare", "--envelope", envPath, cmpDemoRun(4), cmpDemoRun(5)}, 0, "Result: no regression"},
		{"slower", []string{"compare", "--envelope", envPath, cmpSlowed(t, dir, 4, 1.5), cmpSlowed(t, dir, 5, 1.5)}, 1, "Aggregate p95 rose"},
		{"json", []string{"compare", "--format", "json", "--envelope", envPath, cmpSlowed(t, dir, 3, 1.5), cmpSlowed(t, dir, 5, 1.5)}, 1, `"regressed": true`},
		{"no envelope", []string{"compare", cmpDemoRun(4)}, 2, "give --envelope"},
		{"bad tolerance", []string{"compare", "--envelope", envPath, "--tolerance", "lots", cmpDemoRun(4)}, 2, "--tolerance"},
		{"missing run file", []string{"compare", "--envelope", envPath, filepath.Join(dir, "nope.json")}, 2, "nope.json"},
		{"scaling on one level", []string{"compare", "--scaling", "--chart-dir", "", cmpDemoRun(1), cmpDemoRun(2), cmpDemoRun(3)}, 2, "one concurrency level"},
		{"scaling with levels", []string{"compare", "--scaling", "--levels", "10,20,40", "--chart-dir", filepath.Join(dir, "charts"), cmpDemoRun(1), cmpDemoRun(2), cmpDemoRun(3)}, 0, "USL fit over 3 runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, so, se := cmpRun(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, so, se)
			}
			got := so
			if code == 2 {
				got = se
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, got)
			}
		})
	}
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	envPath := demoEnvelopeFile(t, dir)
	ndjson := fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")
	opts := fixtures.Path(t, "k6/generated-v2.2.0/script.k6-inspect.json")

	code, _, se := cmpRun(t, "report", "--envelope", envPath, "--out", filepath.Join(dir, "env", "report.md"))
	if code != 0 {
		t.Fatalf("envelope report: exit %d: %s", code, se)
	}
	if _, err := os.Stat(filepath.Join(dir, "env", "report.md")); err != nil {
		t.Error(err)
	}

	code, so, se := cmpRun(t, "report", "--k6-options", opts, "--format", "json", ndjson)
	if code != 0 {
		t.Fatalf("stage report: exit %d: %s", code, se)
	}
	var js struct {
		Endpoints map[string]struct {
			Stages []struct{ Samples int } `json:"stages"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(so), &js); err != nil {
		t.Fatalf("%v: %s", err, so)
	}
	if len(js.Endpoints) != 2 || len(js.Endpoints["home"].Stages) != 3 || js.Endpoints["home"].Stages[0].Samples == 0 {
		t.Errorf("json %s", so)
	}

	md := filepath.Join(dir, "stage", "report.md")
	if err := os.MkdirAll(filepath.Dir(md), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, se := cmpRun(t, "report", "--stages", "3s:10,2s:10,2s:2", "--out", md, ndjson); code != 0 {
		t.Fatalf("stage markdown: exit %d: %s", code, se)
	}
	if _, err := os.Stat(filepath.Join(dir, "stage", "charts", "dark", "latency-distribution.png")); err != nil {
		t.Error(err)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"report", ndjson}, "--k6-options"},
		{[]string{"report"}, "give a run FILE"},
		{[]string{"report", "--stages", "1s:1", ndjson}, "do not cover the run"},
		{[]string{"report", "--stages", "3s:10,2s:10,2s:2", "--baseline-endpoint", "nope", ndjson}, `baseline endpoint "nope" does not exist`},
	} {
		code, _, se := cmpRun(t, bad.args...)
		if code != 2 || !strings.Contains(se, bad.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", bad.args, code, se, bad.want)
		}
	}
}
