package main

import (
	"bytes"
	"flag"
	"image"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/envelope-dev/envelope/internal/browser"
)

// The docs show the top of each page in both schemes (docs/report.md);
// `go test ./cmd/envelope -run TestDemoNoServe/browser -screenshots
// docs/images/pages` writes them again from the demo's pages.
var screenshots = flag.String("screenshots", "", "folder to write the top of each demo page's light and dark screenshot into (the docs' images)")

// docScreenshotHeight is how much of a page's top the docs show, in
// pixels: the banner, the heading and the first table or chart.
const docScreenshotHeight = 1100

// writeDocScreenshots writes the top of r's screenshots as name-light.png
// and name-dark.png into the -screenshots folder, when it is set.
func writeDocScreenshots(t *testing.T, name string, r browser.Result) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	for scheme, shot := range map[string][]byte{"light": r.Light, "dark": r.Dark} {
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatalf("%s %s screenshot: %v", name, scheme, err)
		}
		b := img.Bounds()
		top := image.NewRGBA(image.Rect(0, 0, b.Dx(), min(b.Dy(), docScreenshotHeight)))
		draw.Draw(top, top.Bounds(), img, b.Min, draw.Src)
		var out bytes.Buffer
		if err := png.Encode(&out, top); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(*screenshots, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*screenshots, name+"-"+scheme+".png"), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
