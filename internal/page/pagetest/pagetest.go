// Package pagetest checks, for tests, that an HTML page stands alone.
package pagetest

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"regexp"
	"strings"
	"testing"
)

// fetched finds the values of the attributes a browser loads by itself.
var fetched = regexp.MustCompile(`<(img|source|script|link|iframe|video|audio|embed|object)\b[^>]*?\b(src|srcset|href|data)="([^"]*)"`)

// PNGs fails tb when the page names anything a browser would fetch other
// than a data: URI holding a PNG (every candidate of a srcset included),
// or a PNG that does not decode to an image with a size; it returns how
// many images the page holds.
func PNGs(tb testing.TB, page []byte) int {
	tb.Helper()
	images := 0
	for _, m := range fetched.FindAllSubmatch(page, -1) {
		val := string(m[3])
		for _, cand := range strings.Split(val, ", data:") {
			fields := strings.Fields(strings.TrimPrefix(cand, "data:"))
			if len(fields) == 0 {
				tb.Errorf("<%s %s> is empty", m[1], m[2])
				continue
			}
			b64, ok := strings.CutPrefix(fields[0], "image/png;base64,")
			if !ok {
				tb.Errorf("<%s %s> names %.60q, not an inline PNG", m[1], m[2], val)
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				tb.Errorf("<%s %s>: %v", m[1], m[2], err)
				continue
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(raw))
			if err != nil || cfg.Width == 0 || cfg.Height == 0 {
				tb.Errorf("<%s %s>: not a PNG with a size: %v, %dx%d", m[1], m[2], err, cfg.Width, cfg.Height)
			}
			images++
		}
	}
	for _, bad := range []string{`src="http`, `srcset="http`, `src="//`, `@import`, `url(http`} {
		if bytes.Contains(page, []byte(bad)) {
			tb.Errorf("the page has %s", bad)
		}
	}
	return images
}
