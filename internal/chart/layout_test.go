package chart

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// Tick labels carry the precision the axis span needs: a throughput axis
// a few tenths wide must not read "56, 56, 56".
func TestSpanTicksPrecision(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
	}{{55.9, 56.35}, {0.001, 0.004}, {0, 1000}, {357.7, 405.3}, {99.98, 100.02}} {
		seen := map[string]bool{}
		n := 0
		for _, tk := range (spanTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label == "" {
				continue
			}
			n++
			if seen[tk.Label] {
				t.Errorf("%g–%g: label %q repeats", tc.lo, tc.hi, tk.Label)
			}
			seen[tk.Label] = true
		}
		if n < 2 {
			t.Errorf("%g–%g: %d labelled ticks", tc.lo, tc.hi, n)
		}
	}
}

// Nothing is drawn in the outer band of the image: the title keeps off
// the top edge and the legend's swatches stay inside the right edge.
func TestChartsKeepAMargin(t *testing.T) {
	cats := []string{"run-1", "run-2", "run-3", "run-4", "run-5"}
	c := Chart{Title: "Throughput per run (http_reqs rate)", YLabel: "req/s", Categories: cats,
		Lines: []Series{{Name: "run rate", Values: []float64{55.97, 56.28, 56.0, 56.2, 56.1}}},
		Bands: []Band{{Name: "band 55.97–56.28 req/s", Low: 55.97, High: 56.28}, {Name: "95% CI of the mean 55.93–56.27", Low: 55.93, High: 56.27}}}
	dir := filepath.Join(t.TempDir(), "charts")
	if _, err := WriteThemed(c, dir, "tp"); err != nil {
		t.Fatal(err)
	}
	for _, th := range Themes() {
		f, err := os.Open(filepath.Join(dir, th.Name, "tp.png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		_ = f.Close() // only read
		if err != nil {
			t.Fatal(err)
		}
		br, bg, bb, _ := th.Background.RGBA()
		b := img.Bounds()
		const band = 4 // pixels
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				if x >= b.Min.X+band && x < b.Max.X-band && y >= b.Min.Y+band && y < b.Max.Y-band {
					continue
				}
				r, g, bl, _ := img.At(x, y).RGBA()
				if r>>8 != br>>8 || g>>8 != bg>>8 || bl>>8 != bb>>8 {
					t.Fatalf("%s: ink at (%d,%d) within %d px of the edge", th.Name, x, y, band)
				}
			}
		}
	}
}
