package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// The JSON shape consumers read: runs[].source/format/duration_s/metrics with
// k6's stat names, sub-metrics by their k6 names, --stats honoured.
func TestSummarizeJSON(t *testing.T) {
	runB := fixtures.Path(t, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz")
	runA := fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-summary-export.json")
	code, so, se := cmdlinetest.Capture(runCLI, "summarize", "--format", "json", "--stats", "avg,p(95),p(99.9),count", runB, runA)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	var out struct {
		Runs []struct {
			Source    string  `json:"source"`
			Format    string  `json:"format"`
			Mode      string  `json:"mode"`
			DurationS float64 `json:"duration_s"`
			Metrics   map[string]struct {
				Type     string             `json:"type"`
				Contains string             `json:"contains"`
				Values   map[string]float64 `json:"values"`
			} `json:"metrics"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(so), &out); err != nil {
		t.Fatalf("%v\n%s", err, so)
	}
	if len(out.Runs) != 2 {
		t.Fatalf("%d runs", len(out.Runs))
	}
	b, a := out.Runs[0], out.Runs[1]
	// The span of the samples: k6's 6.796 s less the 0.2 s before the
	// arrival-rate scenario's first iteration, which no sample shows.
	if b.Source != runB || b.Format != "ndjson" || b.Mode != "exact" || b.DurationS < 6.59 || b.DurationS > 6.61 {
		t.Errorf("run header %+v", b)
	}
	d := b.Metrics["http_req_duration{expected_response:true}"]
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range d.Values {
			yield(k)
		}
	})
	if d.Type != "trend" || d.Contains != "time" || strings.Join(keys, ",") != "avg,count,p(95),p(99.9)" {
		t.Errorf("sub-metric %+v", d)
	}
	if m := b.Metrics["http_reqs"]; m.Type != "counter" || m.Values["count"] != 128 || m.Values["rate"] < 19.3 || m.Values["rate"] > 19.4 {
		t.Errorf("http_reqs %+v", m)
	}
	if m := b.Metrics["http_req_failed"]; m.Type != "rate" || m.Values["passes"] != 54 || m.Values["fails"] != 74 || m.Values["rate"] != 0.421875 {
		t.Errorf("http_req_failed %+v", m)
	}
	// A summary shows the stats it has; asked ones it lacks are left out.
	if m := a.Metrics["http_req_duration"]; a.Format != "summary-export" || a.Mode != "summary" || m.Values["p(95)"] != 1.1224862 || len(m.Values) != 2 {
		t.Errorf("summary run %s %s %+v", a.Format, a.Mode, m)
	}
	// The key order follows the stats asked for, as k6 prints them.
	if i, j := strings.Index(so, `"avg"`), strings.Index(so, `"p(95)"`); i < 0 || j < i {
		t.Error("values not in --stats order")
	}
}

func TestSummarizeText(t *testing.T) {
	code, so, se := cmdlinetest.Capture(runCLI, "summarize", "--group-by", "scenario", fixtures.Path(t, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	for _, want := range []string{"ndjson, exact mode", "http_req_duration{expected_response:true}", "p(95)=", "scenario=closed", "status is 200"} {
		if !strings.Contains(so, want) {
			t.Errorf("output lacks %q:\n%s", want, so)
		}
	}
}

// Bad input: non-zero exit, the file and line named; --lenient skips and
// reports the count.
func TestSummarizeBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.ndjson")
	content := `{"type":"Metric","data":{"name":"vus","type":"gauge","contains":"default","thresholds":[],"submetrics":null},"metric":"vus"}
{"metric":"vus","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{}}}
{"metric":"vus","type":"Point","data":{"time":"2026-11-30T08:51:05Z","value":NaN,"tags":{}}}
`
	if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, se := cmdlinetest.Capture(runCLI, "summarize", bad)
	if code == 0 || !strings.Contains(se, bad+`:3: field "data.value"`) {
		t.Errorf("exit %d, stderr %q", code, se)
	}
	code, so, se := cmdlinetest.Capture(runCLI, "summarize", "--lenient", "--format", "json", bad)
	if code != 0 || !strings.Contains(so, `"skipped_lines": 1`) || !strings.Contains(se, "skipped bad lines") {
		t.Errorf("lenient: exit %d, stdout %s, stderr %s", code, so, se)
	}
	if code, _, se := cmdlinetest.Capture(runCLI, "summarize", "--stats", "p95", bad); code == 0 || !strings.Contains(se, `unknown trend stat "p95"`) {
		t.Errorf("bad --stats: exit %d, %s", code, se)
	}
}

// "-" reads standard input (kingpin passes a lone "-" on as "").
func TestSummarizeStdin(t *testing.T) {
	f, err := os.Open(fixtures.Path(t, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read only: closing loses nothing
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	code, so, se := cmdlinetest.Capture(runCLI, "summarize", "--format", "json", "-")
	if code != 0 || !strings.Contains(so, `"source": "-"`) || !strings.Contains(so, `"format": "ndjson"`) {
		t.Errorf("exit %d, stdout %.200s, stderr %s", code, so, se)
	}
}
