package page

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/page/pagetest"
	"github.com/envelope-dev/envelope/internal/report"
)

// envelopeReport writes the report of the envelope of the embedded k6
// runs, with its charts, and returns the Markdown and its folder.
func envelopeReport(t *testing.T) ([]byte, string) {
	t.Helper()
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	md := filepath.Join(dir, "report.md")
	if err := report.WriteEnvelopeReport(env, md); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	return b, dir
}

func TestRenderInlinesReportCharts(t *testing.T) {
	md, dir := envelopeReport(t)
	refs := regexp.MustCompile(`(src|srcset)="charts/[^"]+\.png"`).FindAll(md, -1)
	if len(refs) < 4 {
		t.Fatalf("the report names %d chart files; want the charts it draws", len(refs))
	}
	out, err := Render(Doc{Title: "Baseline envelope", Status: Info, Verdict: "five runs", Markdown: md, BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// Each picture keeps its dark source and its <img>; the light source,
	// the same image as the <img>, is dropped.
	pictures := bytes.Count(md, []byte("<picture>"))
	if n := pagetest.PNGs(t, out); n != 2*pictures || len(refs) != 3*pictures {
		t.Errorf("%d inline images for the %d pictures (%d chart references) of the Markdown, want 2 each", n, pictures, len(refs))
	}
	if bytes.Contains(out, []byte("(prefers-color-scheme: light)")) {
		t.Error("a light source the same as its <img> is kept")
	}
	// Each chart's own file is inlined: the light throughput chart's bytes
	// are in the page.
	light, err := os.ReadFile(filepath.Join(dir, "charts", "light", "throughput.png"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(base64.StdEncoding.EncodeToString(light))) {
		t.Error("the light throughput chart is not inlined")
	}
	if !bytes.Contains(out, []byte(`media="screen and (prefers-color-scheme: dark)"`)) {
		t.Error("the dark charts are not limited to the screen: a printed page would take them")
	}
	again, err := Render(Doc{Title: "Baseline envelope", Status: Info, Verdict: "five runs", Markdown: md, BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, again) {
		t.Error("the same report renders to different pages")
	}
}

func TestRenderRefusesFetches(t *testing.T) {
	_, dir := envelopeReport(t)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("plain text, not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, md, want string
	}{
		{"remote image", `![x](https://example.com/a.png)`, "https://example.com/a.png is a remote or absolute address"},
		{"plain http image", `<img src="http://example.com/a.png">`, "http://example.com/a.png is a remote"},
		{"protocol-relative image", `<img src="//cdn.example.com/a.png">`, "//cdn.example.com/a.png is a remote"},
		{"file URL", `<img src="file:///etc/a.png">`, "file:///etc/a.png is a remote"},
		{"absolute path", `<img src="/charts/light/throughput.png">`, "/charts/light/throughput.png is an absolute path"},
		{"remote candidate in a srcset", `<picture><source srcset="charts/light/throughput.png 1x, https://example.com/b.png 2x"><img src="charts/light/throughput.png"></picture>`, "https://example.com/b.png is a remote"},
		{"remote stylesheet", `<link rel="stylesheet" href="https://fonts.example.com/a.css">`, `<link href="https://fonts.example.com/a.css">`},
		{"local stylesheet", `<link rel="stylesheet" href="style.css">`, "only images"},
		{"remote script", `<script src="https://example.com/a.js"></script>`, `<script src="https://example.com/a.js">`},
		{"local script", `<script src="app.js"></script>`, "the page would fetch app.js"},
		{"remote image in an SVG", `<svg><image href="https://example.com/a.png"/></svg>`, "https://example.com/a.png is a remote"},
		{"remote poster", `<video poster="https://example.com/p.png"></video>`, "https://example.com/p.png is a remote"},
		{"remote frame", `<iframe src="https://example.com/"></iframe>`, "https://example.com/ is a remote"},
		{"css url", `<div style="background: url(https://example.com/b.png)">x</div>`, "the style loads url(https://example.com/b.png"},
		{"css import", "<style>@import 'https://example.com/a.css';</style>", "the style loads @import"},
		{"missing image", `![x](charts/light/none.png)`, "none.png"},
		{"not an image", `![x](notes.txt)`, "not a PNG, SVG, JPEG, GIF or WebP image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(Doc{Title: "t", Status: Info, Verdict: "v", Markdown: []byte(tc.md + "\n"), BaseDir: dir})
			if err == nil {
				t.Fatalf("%s rendered", tc.md)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestRenderKeepsLinksAndDataURIs(t *testing.T) {
	const data = "data:image/png;base64,iVBORw0KGgo="
	md := "See [k6](https://grafana.com/docs/k6/) and [the Markdown](report.md).\n\n<img alt=\"dot\" src=\"" + data + "\">\n"
	out, err := Render(Doc{Title: "t", Status: Info, Verdict: "v", Markdown: []byte(md)})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<a href="https://grafana.com/docs/k6/">k6</a>`, `<a href="report.md">`, `src="` + data + `"`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("page lacks %s", want)
		}
	}
}

func TestRenderEscapes(t *testing.T) {
	out, err := Render(Doc{Title: `</title><script>alert(1)</script> & "q"`, Status: Fail, Verdict: `<img src=x onerror=alert(1)> p95 > 5%`, Markdown: []byte("# x\n")})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script>alert", "<img src=x"} {
		if bytes.Contains(out, []byte(bad)) {
			t.Errorf("page has %q unescaped", bad)
		}
	}
	for _, want := range []string{"<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;q&#34;</title>", "&lt;img src=x onerror=alert(1)&gt; p95 &gt; 5%"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("page lacks %s", want)
		}
	}
}

func TestVerdictBanner(t *testing.T) {
	for _, tc := range []struct {
		status Status
		want   string
	}{
		{Pass, `<div class="verdict verdict-pass" role="status"><strong class="verdict-kind">Pass</strong> <span class="verdict-text">no regression</span></div>`},
		{Fail, `<div class="verdict verdict-fail" role="status"><strong class="verdict-kind">Fail</strong> <span class="verdict-text">no regression</span></div>`},
		{Info, `<div class="verdict verdict-info" role="status"><strong class="verdict-kind">Summary</strong> <span class="verdict-text">no regression</span></div>`},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			out, err := Render(Doc{Title: "t", Status: tc.status, Verdict: "no regression", Markdown: []byte("text\n")})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(out, []byte(tc.want)) {
				t.Errorf("banner missing:\n%s", out[:min(len(out), 4000)])
			}
			css := ".verdict-" + string(tc.status) + " {"
			if !bytes.Contains(out, []byte(css)) {
				t.Errorf("no style for %s", css)
			}
		})
	}
	for _, d := range []Doc{
		{Title: "t", Status: "ok", Verdict: "v"},
		{Title: "t", Status: Pass},
		{Status: Pass, Verdict: "v", Markdown: []byte("## not a title\n")},
	} {
		if _, err := Render(d); err == nil {
			t.Errorf("%+v rendered", d)
		}
	}
}

// Tables scroll in their own wrapper and get the sorting script; the
// styles cover both schemes and print, and nothing is loaded.
func TestTablesAndStyles(t *testing.T) {
	md := "| Figure | Change |\n| :-- | --: |\n| p95 | +1.7% |\n| median | -0.4% |\n\n- item\n\n| Only | Header |\n| -- | -- |\n| a | b |\n"
	out, err := Render(Doc{Title: "t", Status: Pass, Verdict: "v", Markdown: []byte(md)})
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(out, []byte(`<div class="table-wrap"><table>`)); n != 2 {
		t.Errorf("%d tables in a scrolling wrapper, want 2", n)
	}
	for _, want := range []string{
		`<meta name="viewport" content="width=device-width, initial-scale=1">`,
		"@media screen and (prefers-color-scheme: dark)",
		"@media print",
		".table-wrap { overflow-x: auto;",
		`th.setAttribute("aria-sort"`,
		`addEventListener("click"`,
		`<td style="text-align:right" class="num">+1.7%</td>`,
		`<td style="text-align:left">p95</td>`,
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("page lacks %s", want)
		}
	}
	if pagetest.PNGs(t, out) != 0 {
		t.Error("images in a page without any")
	}
	for _, bad := range []string{"@font-face", "@import", "fonts.googleapis", "://"} {
		if bytes.Contains(out, []byte(bad)) {
			t.Errorf("page has %q", bad)
		}
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "page.html")
	if err := WriteFile(path, Doc{Title: "t", Status: Pass, Verdict: "written", Markdown: []byte("x\n")}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte("written")) {
		t.Errorf("page not written: %v", err)
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "p.html"), Doc{Title: "t", Status: Pass, Verdict: "v", Markdown: []byte("![x](https://example.com/a.png)\n")}); err == nil {
		t.Error("a page with a remote image was written")
	}
}

// Without a title the page takes its first level-1 heading's text.
func TestTitleFromHeading(t *testing.T) {
	md, dir := envelopeReport(t)
	out, err := Render(Doc{Status: Info, Verdict: "v", Markdown: md, BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<title>Baseline envelope: " + demo.Name + "</title>"; !bytes.Contains(out, []byte(want)) {
		t.Errorf("page lacks %s", want)
	}
}

// Images are inlined with their type, from the extension or, without
// one, from their first bytes; every candidate of a srcset is inlined.
func TestInlineImageTypes(t *testing.T) {
	_, reportDir := envelopeReport(t)
	chart, err := os.ReadFile(filepath.Join(reportDir, "charts", "light", "throughput.png"))
	if err != nil {
		t.Fatal(err)
	}
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>`)
	// An SVG opening with a comment is known by its extension only.
	commented := append([]byte("<!-- drawn by hand -->\n"), svg...)
	jpeg := []byte{0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 'J', 'F', 'I', 'F', 0}
	dir := t.TempDir()
	files := map[string][]byte{"a.png": chart, "chart": chart, "b.svg": svg, "drawing": svg, "c.jpg": jpeg, "photo": jpeg, "d.svg": commented}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{"a.png", "data:image/png;base64," + base64.StdEncoding.EncodeToString(chart)},
		{"chart", "data:image/png;base64," + base64.StdEncoding.EncodeToString(chart)},
		{"b.svg", "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg)},
		{"drawing", "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg)},
		{"c.jpg", "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg)},
		{"photo", "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg)},
		{"d.svg", "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(commented)},
	} {
		out, err := Render(Doc{Title: "t", Status: Info, Verdict: "v", Markdown: []byte("![x](" + tc.src + ")\n"), BaseDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(out, []byte(`src="`+tc.want+`"`)) {
			t.Errorf("%s is not inlined as %.40s…", tc.src, tc.want)
		}
	}
	md := `<picture><source srcset="a.png 1x, b.svg 2x"><source srcset="data:image/png;base64,iVBORw0KGgo= 1x, c.jpg 2x"><source srcset="b.svg, c.jpg"><img src="a.png"></picture>` + "\n"
	out, err := Render(Doc{Title: "t", Status: Info, Verdict: "v", Markdown: []byte(md), BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	png64, svg64, jpg64 := base64.StdEncoding.EncodeToString(chart), base64.StdEncoding.EncodeToString(svg), base64.StdEncoding.EncodeToString(jpeg)
	for _, want := range []string{
		`srcset="data:image/png;base64,` + png64 + ` 1x, data:image/svg+xml;base64,` + svg64 + ` 2x"`,
		`srcset="data:image/png;base64,iVBORw0KGgo= 1x, data:image/jpeg;base64,` + jpg64 + ` 2x"`,
		`srcset="data:image/svg+xml;base64,` + svg64 + `, data:image/jpeg;base64,` + jpg64 + `"`,
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("page lacks %.120s…", want)
		}
	}
}
