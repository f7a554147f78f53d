package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/envelope-dev/envelope/internal/browser"
	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
)

// `envelope demo --no-serve`, the README's first command without the
// serving at the end, writes every file it announces and prints each
// step's line in step order: the sample runs, the envelope, rules,
// compare, dashboards and the backtest verdicts.
func TestDemoNoServe(t *testing.T) {
	dir := t.TempDir()
	code, so, se := cmdlinetest.Capture(runCLI, "demo", "--no-serve", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, so, se)
	}
	if strings.Contains(se, "level=ERROR") || strings.Contains(se, "level=WARN") {
		t.Errorf("demo logged a problem: %s", se)
	}
	if strings.Contains(so, "serving the demo envelopes") {
		t.Errorf("--no-serve served: %s", so)
	}
	want, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	second, err := demo.SecondEnvelope()
	if err != nil {
		t.Fatal(err)
	}

	// Each step's line, in the order the steps run.
	lines := []string{
		"demo output folder: " + dir,
		"== 5 embedded k6 runs",
		"run-1.json     20311  55.97",
		"run-5.json     20382  56.06",
		"throughput: mean 56.1 req/s, 55.97–56.28 req/s across 5 runs, CV 0.24%",
		"latency: p95 357.7–405.3 ms, p99 922.7–937.2 ms",
		"errors: 0 of 101882 requests failed",
		"envelope: " + filepath.Join(dir, "envelope.yaml"),
		"envelope report: " + filepath.Join(dir, "report.md"),
		"second envelope: " + filepath.Join(dir, "envelopes", second.Name+".yaml") + ` (match envelope="` + second.Name + `"`,
		"rules: 3 files in " + filepath.Join(dir, "rules"),
		"rules of the second envelope: " + filepath.Join(dir, "rules", second.Name),
		`compare: candidates run-4.json, run-5.json against the envelope "` + want.Name + `" of run-1.json, run-2.json, run-3.json, run-4.json, run-5.json: no regression`,
		"compare: Aggregate throughput",
		"dashboards: 6 Grafana dashboards in " + filepath.Join(dir, "dashboards") + " (envelope bands from the exporter's gauges, thresholds from envelope.yaml)",
		"history: 30 runs of history-shared, one per commit, recorded in " + filepath.Join(dir, "envelope-history.db"),
		"document_upload.median of test history-shared (ms), main line: 30 runs in commit-time order",
		"\n1   1    c01",
		"\n30  30   c30",
		"history changes: every figure of the 30 runs",
		"test history-shared: 30 runs on the main line, ",
		"backtest: a simulated baseline-like run (simulated-baseline.ndjson.gz): no alert fired\n",
		"backtest: the same run with 1% failed requests (" + filepath.Join("regressed", "simulated-errors.ndjson.gz") + "): fired ",
	}
	// The runs' known changes, as history changes finds them: the upload's
	// step a regression at its run, the one slow run an outlier only.
	for _, re := range []string{`\n\S+ +document_upload\.median +11 +c11 +regression `, `\n20 +actor_get\.median +c20 `} {
		if !regexp.MustCompile(re).MatchString(so) {
			t.Errorf("stdout lacks %s:\n%s", re, so)
		}
	}
	if regexp.MustCompile(`\n\S+ +\S+ +20 +c20 +(regression|improvement) `).MatchString(so) {
		t.Errorf("the one slow run is a change point:\n%s", so)
	}
	rest := so
	for _, l := range lines {
		i := strings.Index(rest, l)
		if i < 0 {
			t.Fatalf("stdout lacks %q after the lines before it:\n%s", l, so)
		}
		rest = rest[i+len(l):]
	}
	if !strings.Contains(rest, "K6Envelope") {
		t.Errorf("the regressed run's verdict names no envelope alert: %q", rest)
	}

	// Every report's page, listed after the backtest: standing alone, each
	// chart of its Markdown inline in both themes, its verdict on top.
	_, list, ok := strings.Cut(rest, "pages: one self-contained HTML file per report (charts inline, no network needed):\n")
	if !ok {
		t.Fatalf("stdout lists no pages after the backtest:\n%s", rest)
	}
	pages := []struct {
		name, md, verdict string
		pictures          int // the page's own charts, beside its Markdown's
	}{
		{"report.html", "report.md", "throughput: mean 56.1 req/s, 55.97–56.28 req/s across 5 runs, CV 0.24%; latency: p95 357.7–405.3 ms", 0},
		// The simulated run with 1% failed requests over time: its rate,
		// its latency percentiles and its failures.
		{"compare.html", "", "Regression in aggregate error rate: 1 candidate run against envelope " + want.Name + " (exit 1)", 3},
		{"stage-report.html", "stage-report.md", "Fastest p95 endpoint: actor_get at ", 0},
		{"history-report.html", "history-report.md", "30 runs, ", 0},
	}
	for _, pg := range pages {
		path := filepath.Join(dir, pg.name)
		if !strings.Contains(list, "  "+path+"\n") {
			t.Errorf("stdout does not list %s:\n%s", path, list)
		}
		pictures := pg.pictures
		if pg.md != "" {
			b, err := os.ReadFile(filepath.Join(dir, pg.md))
			if err != nil {
				t.Fatal(err)
			}
			if pictures = strings.Count(string(b), "<picture>"); pictures == 0 {
				t.Errorf("%s has no chart", pg.md)
			}
		}
		if _, banner := readPage(t, path, 2*pictures); !strings.HasPrefix(banner, pg.verdict) {
			t.Errorf("%s: banner %q, want %q", pg.name, banner, pg.verdict)
		}
	}
	// Each page as a reader's browser opens it, in both schemes: no
	// console error, no request beyond the file, every chart decoded and
	// laid out, not blank, and the verdict on it.
	t.Run("browser", func(t *testing.T) {
		for _, pg := range pages {
			path := filepath.Join(dir, pg.name)
			r := browser.Check(t, path, browser.Options{Texts: []string{pg.verdict}})
			if len(r.Images) < pg.pictures {
				t.Errorf("%s: the browser laid out %d images, want at least %d", pg.name, len(r.Images), pg.pictures)
			}
			writeDocScreenshots(t, strings.TrimSuffix(pg.name, ".html"), r)
		}
	})

	// The envelope is the one the embedded runs give (the committed file),
	// and the second one keeps its match.
	got, err := envelope.ReadFile(filepath.Join(dir, "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != want.Name || got.Throughput.Mean != want.Throughput.Mean || got.Latency.P95.Max != want.Latency.P95.Max || got.Errors.Total != want.Errors.Total {
		t.Errorf("envelope.yaml: %s %+v %+v, want %s %+v %+v", got.Name, got.Throughput, got.Latency.P95, want.Name, want.Throughput, want.Latency.P95)
	}
	written, err := os.ReadFile(filepath.Join(dir, "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := fs.ReadFile(demo.FS(), "envelope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, committed) {
		t.Error("envelope.yaml differs from the committed internal/demo/envelope.yaml")
	}
	got2, err := envelope.ReadFile(filepath.Join(dir, "envelopes", second.Name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got2.Name != second.Name || got2.Match != second.Match {
		t.Errorf("second envelope: name %q match %q, want %q %q", got2.Name, got2.Match, second.Name, second.Match)
	}

	// The report and its charts.
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(md), "# Baseline envelope: "+want.Name+"\n") || !strings.Contains(string(md), "charts/") {
		t.Errorf("report.md: %.300s", md)
	}
	for _, theme := range []string{"light", "dark"} {
		for _, chart := range []string{"throughput", "latency-percentiles"} {
			b, err := os.ReadFile(filepath.Join(dir, "charts", theme, chart+".png"))
			if err != nil {
				t.Error(err)
			} else if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("charts/%s/%s.png is not a PNG", theme, chart)
			}
		}
	}

	// Rules of both envelopes: recording and alerting rules, and the
	// second envelope's aggregations select only its tests.
	for _, rf := range []struct{ path, must string }{
		{filepath.Join(dir, "rules", "envelope.rules.yaml"), ""},
		{filepath.Join(dir, "rules", second.Name, "envelope.rules.yaml"), `envelope="` + second.Name + `"`},
	} {
		b, err := os.ReadFile(rf.path)
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			Groups []struct {
				Rules []struct {
					Record, Alert string
				}
			}
		}
		if err := yaml.Unmarshal(b, &file); err != nil {
			t.Fatalf("%s: %v", rf.path, err)
		}
		records, alerts := 0, 0
		for _, g := range file.Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					records++
				}
				if r.Alert != "" {
					alerts++
				}
			}
		}
		if records == 0 || alerts == 0 || !strings.Contains(string(b), rf.must) {
			t.Errorf("%s: %d recording rules, %d alerts, holds %q: %v", rf.path, records, alerts, rf.must, strings.Contains(string(b), rf.must))
		}
		for _, f := range []string{"envelope.rules.test.yaml", "envelope.prometheusrule.yaml"} {
			if _, err := os.Stat(filepath.Join(filepath.Dir(rf.path), f)); err != nil {
				t.Error(err)
			}
		}
	}

	// Dashboards; the overview carries the envelope's band edges as
	// fixed thresholds.
	for _, name := range []string{"overview", "endpoints", "runs", "ecs", "exporter"} {
		b, err := os.ReadFile(filepath.Join(dir, "dashboards", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var dash map[string]any
		if err := json.Unmarshal(b, &dash); err != nil {
			t.Fatalf("dashboards/%s.json: %v", name, err)
		}
		if title, _ := dash["title"].(string); !strings.HasPrefix(title, "Envelope / ") {
			t.Errorf("dashboards/%s.json: title %q", name, title)
		}
		if name != "overview" {
			continue
		}
		steps := thresholdValues(dash)
		for what, v := range map[string]float64{"throughput min": want.Throughput.Min, "p95 max (s)": want.Latency.P95.Max / 1000} {
			if !containsClose(steps, v) {
				t.Errorf("overview thresholds %v lack the %s %v", steps, what, v)
			}
		}
	}

	// The simulated runs are point files serve can replay.
	for _, f := range []string{"simulated-baseline.ndjson.gz", filepath.Join("regressed", "simulated-errors.ndjson.gz")} {
		if err := exporter.CheckReplayable(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// thresholdValues collects the values of every threshold step in a
// decoded dashboard.
func thresholdValues(v any) []float64 {
	var out []float64
	switch x := v.(type) {
	case map[string]any:
		if th, ok := x["thresholds"].(map[string]any); ok {
			if steps, ok := th["steps"].([]any); ok {
				for _, s := range steps {
					if m, ok := s.(map[string]any); ok {
						if f, ok := m["value"].(float64); ok {
							out = append(out, f)
						}
					}
				}
			}
		}
		for _, e := range x {
			out = append(out, thresholdValues(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, thresholdValues(e)...)
		}
	}
	return out
}

func containsClose(vs []float64, want float64) bool {
	for _, v := range vs {
		if math.Abs(v-want) <= 1e-9*math.Max(1, math.Abs(want)) {
			return true
		}
	}
	return false
}

// demo --help describes every step the demo runs, and the steps have
// distinct names (an error says which step failed).
func TestDemoHelpNamesEveryStep(t *testing.T) {
	code, so, se := cmdlinetest.Capture(runCLI, "demo", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	flat := strings.Join(strings.Fields(so), " ")
	seen := map[string]bool{}
	for _, s := range demoSteps {
		if seen[s.name] {
			t.Errorf("two steps named %q", s.name)
		}
		seen[s.name] = true
		if s.does == "" || !strings.Contains(flat, s.does) {
			t.Errorf("demo --help does not describe step %s (%q):\n%s", s.name, s.does, so)
		}
	}
	if len(demoSteps) == 0 {
		t.Fatal("the demo has no steps")
	}
}
