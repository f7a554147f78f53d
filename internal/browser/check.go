package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/testenv"
)

// Timeout bounds one Check: starting the browser, loading the page and
// two screenshots, on a loaded two-core machine.
const Timeout = 60 * time.Second

// Check opens the page with Inspect and fails tb on every problem it
// finds (Problems). Without a browser it calls testenv.Missing: the test
// fails under CI=true and skips elsewhere. A browser that is there but
// does not start fails the test.
func Check(tb testing.TB, htmlPath string, o Options) Result {
	tb.Helper()
	if _, ok := Find(); !ok {
		testenv.Missing(tb, "chromium", "install Debian's chromium (apt-get install chromium) or set "+EnvChromium)
	}
	ctx, cancel := context.WithTimeout(tb.Context(), Timeout)
	defer cancel()
	r, err := Inspect(ctx, htmlPath, o)
	if errors.Is(err, ErrNoBrowser) {
		testenv.Missing(tb, "chromium", err.Error())
	}
	if err != nil {
		tb.Fatalf("%s in chromium: %v", htmlPath, err)
	}
	for _, p := range r.Problems(o) {
		tb.Errorf("%s in chromium: %s", htmlPath, p)
	}
	return r
}

// Problems are what a reader would see go wrong with the page: console
// errors, requests beyond the file itself, images that did not decode or
// have no size, a blank screenshot, light and dark screenshots that are
// the same (no dark scheme), and each of o.Texts missing from the
// visible text. None means the page passes.
func (r Result) Problems(o Options) []string {
	var ps []string
	for _, e := range r.ConsoleErrors {
		ps = append(ps, "console error: "+e)
	}
	for _, u := range r.Requests {
		ps = append(ps, "request beyond the file: "+u)
	}
	for _, im := range r.Images {
		switch {
		case !im.Complete:
			ps = append(ps, fmt.Sprintf("image not loaded: %s", short(im.Src)))
		case im.NaturalWidth == 0 || im.NaturalHeight == 0:
			ps = append(ps, fmt.Sprintf("image not decoded (natural size %gx%g): %s", im.NaturalWidth, im.NaturalHeight, short(im.Src)))
		case im.Width == 0 || im.Height == 0:
			ps = append(ps, fmt.Sprintf("image laid out at %gx%g: %s", im.Width, im.Height, short(im.Src)))
		}
	}
	for _, s := range []struct {
		scheme string
		png    []byte
	}{{"light", r.Light}, {"dark", r.Dark}} {
		n, err := inkPixels(s.png)
		switch {
		case err != nil:
			ps = append(ps, fmt.Sprintf("%s screenshot: %v", s.scheme, err))
		case n < minInk:
			ps = append(ps, fmt.Sprintf("%s screenshot is blank: %d pixels differ from its background", s.scheme, n))
		}
	}
	if len(r.Light) > 0 && bytes.Equal(r.Light, r.Dark) {
		ps = append(ps, "the light and dark screenshots are the same: the page has no dark scheme")
	}
	for _, t := range o.Texts {
		if !strings.Contains(r.Text, t) {
			ps = append(ps, fmt.Sprintf("text %q is not on the page", t))
		}
	}
	return ps
}

// minInk is the fewest pixels a screenshot must have off its background
// colour not to count as blank. A blank page has none; one short line of
// text has several hundred.
const minInk = 100

// inkPixels counts the pixels of a PNG that differ from its most common
// colour (the background).
func inkPixels(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, errors.New("none taken")
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	counts := map[uint64]int{}
	total := 0
	eachPixel(img, func(c uint64) {
		counts[c]++
		total++
	})
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	return total - most, nil
}

// eachPixel calls f with each pixel's colour packed in one number,
// reading the pixel bytes directly for the formats Chromium's PNGs
// decode to.
func eachPixel(img image.Image, f func(uint64)) {
	var pix []byte
	switch m := img.(type) {
	case *image.NRGBA:
		if m.Stride == 4*m.Rect.Dx() {
			pix = m.Pix
		}
	case *image.RGBA:
		if m.Stride == 4*m.Rect.Dx() {
			pix = m.Pix
		}
	}
	if pix != nil {
		for i := 0; i+3 < len(pix); i += 4 {
			f(uint64(pix[i])<<24 | uint64(pix[i+1])<<16 | uint64(pix[i+2])<<8 | uint64(pix[i+3]))
		}
		return
	}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			f(uint64(r)<<48 | uint64(g)<<32 | uint64(bl)<<16 | uint64(a))
		}
	}
}

// short cuts a data: URI to its start, for messages.
func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
