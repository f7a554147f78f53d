package main

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/page"
	"github.com/envelope-dev/envelope/internal/page/pagetest"
	"github.com/envelope-dev/envelope/internal/report"
)

// readPage reads a written page and checks it stands alone and holds
// images PNGs; it returns the page and its banner's text.
func readPage(t *testing.T, path string, images int) (string, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := pagetest.PNGs(t, b); n != images {
		t.Errorf("%s: %d inline images, want %d", path, n, images)
	}
	m := regexp.MustCompile(`<span class="verdict-text">([^<]*)</span>`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no verdict banner", path)
	}
	return string(b), html.UnescapeString(string(m[1]))
}

// mixEnvelope writes the envelope of two real baseline-mix runs.
func mixEnvelope(t *testing.T, dir string) string {
	t.Helper()
	fx := "k6/baseline-mix-v2.2.0/"
	path := filepath.Join(dir, "mix.yaml")
	mustRun(t, "baseline", "--name", "mix", "--k6-options", fixtures.Path(t, fx+"script-6m.k6-inspect.json"), "--out", path,
		fixtures.Path(t, fx+"baseline-a.summary.json"), fixtures.Path(t, fx+"baseline-b.summary.json"))
	return path
}

// `envelope report --envelope` writes report.html beside report.md: the
// charts inline, the envelope's headline in the banner.
func TestEnvelopeReportPage(t *testing.T) {
	dir := t.TempDir()
	envPath := mixEnvelope(t, dir)
	md := filepath.Join(dir, "out", "mix.md")
	out := mustRun(t, "report", "--envelope", envPath, "--out", md)
	want := filepath.Join(dir, "out", "mix.html")
	if !strings.Contains(out, md+", "+want) {
		t.Errorf("report printed %q, not both paths", out)
	}
	env, err := envelope.ReadFile(envPath)
	if err != nil {
		t.Fatal(err)
	}
	mdText, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	// Each chart in both themes.
	doc, banner := readPage(t, want, 2*strings.Count(string(mdText), "<picture>"))
	// The banner says what the envelope is: its runs and bands.
	for _, w := range []string{"across 2 runs", "p95 ", "req/s", "errors: "} {
		if !strings.Contains(banner, w) {
			t.Errorf("banner %q lacks %q", banner, w)
		}
	}
	if banner != strings.ReplaceAll(strings.TrimSpace(headline(env)), "\n", "; ") {
		t.Errorf("banner %q is not the envelope's headline", banner)
	}
	if !strings.Contains(doc, "<title>Baseline envelope: mix</title>") || !strings.Contains(doc, `class="verdict verdict-info"`) {
		t.Error("page lacks its title or its info banner")
	}
}

// The stage report writes its page beside its Markdown, the first key
// finding in the banner.
func TestStageReportPage(t *testing.T) {
	dir := t.TempDir()
	ndjson := fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")
	md := filepath.Join(dir, "stage.md")
	out := mustRun(t, "report", "--stages", "3s:10,2s:10,2s:2", "--out", md, ndjson)
	want := filepath.Join(dir, "stage.html")
	if !strings.Contains(out, md+", "+want) {
		t.Errorf("report printed %q, not both paths", out)
	}
	mdText, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	_, findings, ok := strings.Cut(string(mdText), "## Key Findings\n\n- ")
	if !ok {
		t.Fatalf("no key findings in %s", mdText)
	}
	first, _, _ := strings.Cut(findings, "\n")
	doc, banner := readPage(t, want, 2)
	if first = strings.ReplaceAll(first, "**", ""); banner != first {
		t.Errorf("banner %q, want the first finding %q", banner, first)
	}
	if !strings.Contains(doc, "Endpoint Ranking") {
		t.Error("page lacks the ranking")
	}
}

// `envelope history report` writes history-report.html beside the
// Markdown; its banner counts what the report found.
func TestHistoryReportPage(t *testing.T) {
	dir := t.TempDir()
	dsn := filepath.Join(dir, "h.db")
	mustRun(t, "history", "--history", dsn, "--test", "mix", "import", "--pattern", "*.summary.json", fixtures.Path(t, "k6/history-v2.2.0"))
	md := filepath.Join(dir, "history-report.md")
	out := mustRun(t, "history", "--history", dsn, "report", "--out", md)
	want := filepath.Join(dir, "history-report.html")
	if !strings.Contains(out, want) {
		t.Errorf("history report printed %q, not the page's path", out)
	}
	m := regexp.MustCompile(`(\d+) runs, (\d+) series, (\d+) change points, (\d+) outlier runs`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no counts in %q", out)
	}
	mdText, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	doc, banner := readPage(t, want, 2*strings.Count(string(mdText), "<picture>"))
	if w := m[1] + " runs, " + m[2] + " series: " + m[3] + " change points, " + m[4] + " outlier runs"; banner != w {
		t.Errorf("banner %q, want %q", banner, w)
	}
	if m[1] != "30" || m[3] == "0" || m[4] == "0" {
		t.Errorf("the 30 runs with a step and a slow run: %v", m)
	}
	if !strings.Contains(doc, "Change points") {
		t.Error("page lacks the change points")
	}
}

// `compare --format html` holds everything the Markdown holds, the
// window and the exit status's meaning, under a banner that follows the
// exit status; --out writes it to a file.
func TestComparePage(t *testing.T) {
	dir := t.TempDir()
	envPath := mixEnvelope(t, dir)
	fx := "k6/baseline-mix-v2.2.0/"
	for _, tc := range []struct {
		name, run, status, banner, exit string
		code                            int
		// The run over time: its charts (rate, latency, failures), or
		// for a summary the sentence saying what would show it.
		pictures int
		overTime string
	}{
		{"like for like", fixtures.Path(t, fx+"baseline-c.summary.json"), "pass", "No regression: 1 candidate run against envelope mix (exit 0)", "exits 0", 0, 0, report.NoTimelineSentence},
		{"regressed", fixtures.Path(t, fx+"regressed-auth-errors.ndjson.gz"), "fail", "Regression in ", "exits 1", 1, 3, "Time bins of 8s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, so, se := cmpRun(t, "compare", "--envelope", envPath, "--format", "html", tc.run)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, se)
			}
			file := filepath.Join(dir, tc.name, "compare.html")
			code, printed, se := cmpRun(t, "compare", "--envelope", envPath, "--format", "html", "--out", file, tc.run)
			if code != tc.code || printed != "compare: "+file+"\n" {
				t.Fatalf("--out: exit %d, printed %q: %s", code, printed, se)
			}
			doc, banner := readPage(t, file, 2*tc.pictures)
			if !strings.Contains(doc, "Run over time: ") || !strings.Contains(html.UnescapeString(stripTags(doc)), strings.ReplaceAll(tc.overTime, "`", "")) {
				t.Errorf("the page does not show the run over time (%q)", tc.overTime)
			}
			if doc != so {
				t.Error("the page written with --out differs from the one on stdout")
			}
			if !strings.HasPrefix(banner, tc.banner) || !strings.Contains(doc, `class="verdict verdict-`+tc.status+`"`) {
				t.Errorf("banner %q (%s), want %q", banner, tc.status, tc.banner)
			}
			_, md, _ := cmpRun(t, "compare", "--envelope", envPath, "--format", "markdown", tc.run)
			for _, line := range strings.Split(md, "\n") {
				// Every table cell, sentence and note of the Markdown.
				for _, cell := range strings.Split(strings.Trim(line, "|- "), " | ") {
					cell = strings.TrimSpace(cell)
					if cell == "" || strings.Trim(cell, "-") == "" || strings.HasPrefix(cell, "#") {
						continue
					}
					if !strings.Contains(html.UnescapeString(stripTags(doc)), cell) {
						t.Errorf("the page lacks %q", cell)
					}
				}
			}
			for _, w := range []string{"Window: the whole run", tc.exit, compareExitCodes} {
				if !strings.Contains(doc, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			if tc.code == 1 {
				for _, f := range regexp.MustCompile(`\| ([^|]+) \|[^\n]*\| Regression \|`).FindAllStringSubmatch(md, -1) {
					if !strings.Contains(banner, strings.TrimSuffix(strings.TrimSpace(f[1]), " vs other endpoints")) {
						t.Errorf("banner %q does not name the regressed %s", banner, f[1])
					}
				}
			}
		})
	}
	if code, _, se := cmpRun(t, "compare", "--scaling", "--format", "html", cmpDemoRun(1), cmpDemoRun(2)); code != 2 || !strings.Contains(se, "not --scaling") {
		t.Errorf("--scaling --format html: exit %d: %s", code, se)
	}
}

// stripTags is an HTML text's characters without its tags.
func stripTags(s string) string {
	return regexp.MustCompile(`<[^>]*>`).ReplaceAllString(s, "")
}

// The compare page's banner follows the exit status, and says when no
// figure could be judged at all.
func TestCompareVerdict(t *testing.T) {
	fig := func(name figures.Name, endpoint string, v compare.Verdict) compare.Figure {
		return compare.Figure{Name: name, Endpoint: endpoint, Verdict: v}
	}
	for _, tc := range []struct {
		name   string
		res    compare.Result
		status page.Status
		want   string
	}{
		{"regression", compare.Result{Envelope: "e", Candidates: []string{"a", "b"}, Regressed: true, Figures: []compare.Figure{
			fig(figures.P95, "", compare.Regression), fig(figures.Median, "", compare.Pass), fig(figures.P99, "auth_login", compare.Regression)}},
			page.Fail, "Regression in aggregate p95, auth_login p99: 2 candidate runs against envelope e (exit 1)"},
		{"pass", compare.Result{Envelope: "e", Candidates: []string{"a"}, Figures: []compare.Figure{
			fig(figures.P95, "", compare.Inconclusive), fig(figures.P99, "", compare.NotJudgeable)}},
			page.Pass, "No regression: 1 candidate run against envelope e (exit 0)"},
		{"nothing judged", compare.Result{Envelope: "e", Candidates: []string{"a"}, Figures: []compare.Figure{
			fig(figures.P95, "", compare.NoData), fig(figures.P99, "", compare.NotJudgeable)}},
			page.Info, "Not judgeable: no figure of 1 candidate run could be judged against envelope e (exit 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, got := compareVerdict(&tc.res)
			if status != tc.status || got != tc.want {
				t.Errorf("%s %q, want %s %q", status, got, tc.status, tc.want)
			}
		})
	}
}
