package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
)

// The benchmark report of a per-endpoint test, reproduced from its k6
// inspect file with no scenario named: every endpoint in one report, in
// the configured order, with the header and free sections of --params.
func TestReportPerEndpointScenarios(t *testing.T) {
	td := filepath.Join("..", "..", "internal", "stagereport", "testdata")
	dir := t.TempDir()
	md := filepath.Join(dir, "report.md")
	code, so, se := cmdlinetest.Capture(runCLI, "report", "--k6-options", filepath.Join(td, "per-endpoint.k6-inspect.json"),
		"--group-by", "name", "--params", filepath.Join(td, "per-endpoint.params.yaml"), "--out", md, filepath.Join(td, "per-endpoint.ndjson.gz"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	if !strings.Contains(so, "(4 endpoints, 3 stages)") {
		t.Errorf("stdout: %s", so)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"Max delay: 0ms\nEndpoints: steady, adaptive, target-aware, standard\n",
		"4 scenarios (adaptive, standard, steady, target-aware) run these stages in parallel",
		"### Lambda Configuration\n\n_Lambda configuration was not captured for this run._",
		"### steady", "### adaptive", "### target-aware", "### standard",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// --scenario filters.
	code, so, se = cmdlinetest.Capture(runCLI, "report", "--k6-options", filepath.Join(td, "per-endpoint.k6-inspect.json"), "--scenario", "steady",
		"--out", filepath.Join(dir, "one.md"), filepath.Join(td, "per-endpoint.ndjson.gz"))
	if code != 0 || !strings.Contains(so, "(1 endpoint, 3 stages)") {
		t.Errorf("--scenario steady: exit %d, %s %s", code, so, se)
	}
	code, _, se = cmdlinetest.Capture(runCLI, "report", "--k6-options", filepath.Join(td, "per-endpoint.k6-inspect.json"), "--scenario", "nope", filepath.Join(td, "per-endpoint.ndjson.gz"))
	if code != 2 || !strings.Contains(se, `--scenario "nope"`) {
		t.Errorf("unknown scenario: exit %d, %s", code, se)
	}
}
