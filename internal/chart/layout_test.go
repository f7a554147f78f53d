package chart

import (
	"image/png"
	"os"
	"path/filepath"
	"slices"
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
		for _, tk := range (Ticks{}).Ticks(tc.lo, tc.hi) {
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

// Every label reads back as its tick's value over axes of many spans and
// offsets, among them the throughput axes whose ticks fall at 0.05
// offsets (54.95, 55.10, 55.25), which one decimal misread by 0.05.
func TestTicksReadAsTheirValues(t *testing.T) {
	for _, base := range []float64{0, 0.003, 1, 54.8, 56.35, 997, 12345} {
		for _, span := range []float64{0.004, 0.05, 0.3, 0.6, 1.1, 7, 130, 2500} {
			lo, hi := base, base+span
			ts := (Ticks{}).Ticks(lo, hi)
			n := 0
			for _, tk := range ts {
				if tk.Label == "" {
					continue
				}
				n++
				if !readsAs(tk.Label, tk.Value, span/100) {
					t.Errorf("%g–%g: tick at %v labelled %q", lo, hi, tk.Value, tk.Label)
				}
			}
			if n < 2 {
				t.Errorf("%g–%g: %d labelled ticks", lo, hi, n)
			}
		}
	}
	var labels []string
	for _, tk := range (Ticks{}).Ticks(54.8, 55.4) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if !slices.Contains(labels, "54.95") || !slices.Contains(labels, "55.25") {
		t.Errorf("54.8–55.4 labels %q, want 54.95 and 55.25 among them", labels)
	}
}
