package browser

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/testenv"
)

// dataPNG is a 40x20 PNG with a diagonal, as a data: URI.
func dataPNG(t *testing.T) string {
	return linePNG(t, color.NRGBA{R: 200, G: 40, B: 40, A: 255})
}

// linePNG is a 40x20 PNG with a diagonal of colour c, as a data: URI.
func linePNG(t *testing.T, c color.NRGBA) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 40, 20))
	for x := range 40 {
		img.Set(x, x/2, c)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

// schemes is the CSS of a page that follows the reader's colour scheme.
const schemes = `<style>
body { background: #ffffff; color: #111111; font: 16px sans-serif; }
@media (prefers-color-scheme: dark) { body { background: #111111; color: #eeeeee; } }
</style>`

// page writes an HTML page with body into a temporary folder.
func page(t *testing.T, head, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "page.html")
	html := fmt.Sprintf("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>t</title>%s</head>\n<body>%s</body></html>\n", head, body)
	if err := os.WriteFile(p, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// inspect runs Inspect on a page, the browser required as Check
// requires it.
func inspect(t *testing.T, path string) Result {
	t.Helper()
	if _, ok := Find(); !ok {
		testenv.Missing(t, "chromium", "install Debian's chromium or set "+EnvChromium)
	}
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	r, err := Inspect(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const text = "<h1>Verdict: within the envelope</h1><p>Throughput 56.1 req/s, p95 405 ms.</p>"

// picture is a chart as the pages inline it: a <picture> whose source
// follows the colour scheme.
func picture(light, dark string) string {
	return `<picture><source media="(prefers-color-scheme: dark)" srcset="` + dark + `"><img alt="chart" src="` + light + `" width="200" height="100"></picture>`
}

// A self-contained page with a verdict, an inline PNG, a <picture> with
// a source per scheme, an inline SVG and both colour schemes passes, and
// Check writes its screenshots.
func TestGoodPagePasses(t *testing.T) {
	dark := linePNG(t, color.NRGBA{R: 240, G: 240, B: 100, A: 255})
	p := page(t, schemes, text+`<img alt="chart" src="`+dataPNG(t)+`" width="200" height="100">`+picture(dataPNG(t), dark)+
		`<svg width="120" height="60" viewBox="0 0 120 60"><rect x="10" y="10" width="100" height="40" fill="steelblue"/></svg>`)
	dir := t.TempDir()
	r := Check(t, p, Options{Texts: []string{"Verdict: within the envelope", "56.1 req/s"}, ScreenshotDir: dir, Name: "good"})
	// The img, the picture's light img, the svg, then the picture's
	// dark source.
	if len(r.Images) != 4 {
		t.Fatalf("images %+v, want the img, the picture in each scheme and the svg", r.Images)
	}
	for _, i := range []int{0, 1, 3} {
		im := r.Images[i]
		if im.NaturalWidth != 40 || im.NaturalHeight != 20 || im.Width != 200 || im.Height != 100 || !im.Complete {
			t.Errorf("img %d %+v, want natural 40x20 drawn at 200x100", i, im)
		}
	}
	if r.Images[3].Src != dark {
		t.Errorf("the dark scheme's picture shows %s, want its dark source", short(r.Images[3].Src))
	}
	if sv := r.Images[2]; sv.Src != "svg" || sv.Width != 120 || sv.Height != 60 {
		t.Errorf("svg %+v, want 120x60", sv)
	}
	for _, s := range []string{"light", "dark"} {
		b, err := os.ReadFile(filepath.Join(dir, "good-"+s+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s screenshot: %v", s, err)
		}
	}
	// The dark screenshot is dark: its background is the page's dark one.
	if bg := background(t, r.Dark); bg != (color.NRGBA{0x11, 0x11, 0x11, 0xff}) {
		t.Errorf("dark screenshot background %v, want #111111", bg)
	}
	if bg := background(t, r.Light); bg != (color.NRGBA{0xff, 0xff, 0xff, 0xff}) {
		t.Errorf("light screenshot background %v, want #ffffff", bg)
	}
}

// background is the colour of a screenshot's top-left pixel.
func background(t *testing.T, b []byte) color.NRGBA {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return color.NRGBAModel.Convert(img.At(0, 0)).(color.NRGBA)
}

// Each defect, on a page that has only that one, is among the problems
// Inspect's result shows.
func TestDefectsDetected(t *testing.T) {
	cases := []struct {
		name       string
		head, body string
		texts      []string
		want       string // the start of the problem it must show
	}{
		{"console.error", schemes, text + `<script>console.error("chart data missing")</script>`, nil, "console error: console.error: chart data missing"},
		{"uncaught exception", schemes, text + `<script>throw new Error("boom")</script>`, nil, "console error: uncaught: Error: boom"},
		{"external image", schemes, text + `<img alt="x" src="https://example.com/x.png" width="10" height="10">`, nil, "request beyond the file: https://example.com/x.png"},
		{"external stylesheet", schemes + `<link rel="stylesheet" href="https://example.com/s.css">`, text, nil, "request beyond the file: https://example.com/s.css"},
		{"external script", schemes + `<script src="https://example.com/s.js"></script>`, text, nil, "request beyond the file: https://example.com/s.js"},
		{"broken image", schemes, text + `<img alt="x" src="data:image/png;base64,AAAAAAAAAAAA" width="50" height="50">`, nil, "image not decoded"},
		{"broken dark source", schemes, text + picture(dataPNG(t), "data:image/png;base64,AAAAAAAAAAAA"), nil, "image not decoded"},
		{"blank page", "", "", nil, "light screenshot is blank"},
		{"no dark scheme", "", text, nil, "the light and dark screenshots are the same"},
		{"missing verdict", schemes, text, []string{"Verdict: outside the envelope"}, `text "Verdict: outside the envelope" is not on the page`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := inspect(t, page(t, c.head, c.body))
			ps := r.Problems(Options{Texts: c.texts})
			found := false
			for _, p := range ps {
				found = found || strings.HasPrefix(p, c.want)
			}
			if !found {
				t.Errorf("problems %q lack %q", ps, c.want)
			}
		})
	}
}

// fakeTB records what Check does with a test instead of doing it; as
// in a test, Fatalf and Skipf end the goroutine (check runs Check on
// its own).
type fakeTB struct {
	testing.TB
	failed, skipped bool
	msgs            []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, a ...any) {
	f.failed = true
	f.msgs = append(f.msgs, fmt.Sprintf(format, a...))
}
func (f *fakeTB) Fatalf(format string, a ...any) {
	f.Errorf(format, a...)
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, a ...any) {
	f.skipped = true
	f.msgs = append(f.msgs, fmt.Sprintf(format, a...))
	runtime.Goexit()
}

// check runs Check against a fakeTB and returns what it recorded.
func check(t *testing.T, path string) *fakeTB {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Check(f, path, Options{})
	}()
	<-done
	return f
}

// A browser that is there but does not start fails the test; no browser
// at all fails it under CI=true and skips it elsewhere.
func TestCheckWithoutAWorkingBrowser(t *testing.T) {
	p := page(t, schemes, text)
	t.Setenv(EnvChromium, "/bin/false")
	f := check(t, p)
	if !f.failed || f.skipped {
		t.Errorf("a browser that does not start: failed %t, skipped %t (%q); want a failure", f.failed, f.skipped, f.msgs)
	}

	t.Setenv(EnvChromium, "")
	t.Setenv("PATH", t.TempDir())
	if _, ok := Find(); ok {
		t.Fatal("Find found a browser on an empty PATH")
	}
	for _, ci := range []string{"true", ""} {
		t.Setenv("CI", ci)
		f := check(t, p)
		if wantFail := ci == "true"; f.failed != wantFail || f.skipped == wantFail {
			t.Errorf("no browser, CI=%q: failed %t, skipped %t (%q)", ci, f.failed, f.skipped, f.msgs)
		}
	}
}

// Without a name, the screenshots are named after the page's file.
func TestScreenshotsNamedAfterTheFile(t *testing.T) {
	p := page(t, schemes, text)
	dir := t.TempDir()
	Check(t, p, Options{ScreenshotDir: dir})
	for _, s := range []string{"page-light.png", "page-dark.png"} {
		if _, err := os.Stat(filepath.Join(dir, s)); err != nil {
			t.Error(err)
		}
	}
}
