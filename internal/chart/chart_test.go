package chart

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteThemed(t *testing.T) {
	cats := []string{"run-1", "run-2", "run-3"}
	charts := map[string]Chart{
		"bars": {Title: "bars", YLabel: "req/s", Categories: cats,
			Bars:  []Series{{Name: "rate", Values: []float64{55.9, 56.3, 56.0}}},
			Bands: []Band{{Name: "band", Low: 55.9, High: 56.3}}},
		"lines": {Title: "lines", Categories: cats,
			Lines: []Series{{Name: "p95", Values: []float64{357, 405, 370}}, {Name: "p99", Values: []float64{922, 937, 930}}},
			Bands: []Band{{Name: "p95 band", Low: 357, High: 405}, {Name: "p99 band", Low: 922, High: 937}}},
		"ranges-log": {Title: "ranges", Categories: []string{"a", "b"}, LogY: true,
			Ranges: []Range{{Name: "p95", Values: []float64{20, 1200}, Low: []float64{18, 1100}, High: []float64{25, 1390}}}},
		"boxes": {Title: "boxes", Categories: []string{"a", "b"},
			Boxes: []Box{{1, 5, 6, 20, 70}, {180, 330, 410, 1100, 2800}}},
	}
	for name, c := range charts {
		dir := filepath.Join(t.TempDir(), "charts")
		paths, err := WriteThemed(c, dir, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if paths.Light != "charts/light/"+name+".png" || paths.Dark != "charts/dark/"+name+".png" {
			t.Errorf("%s: paths %+v", name, paths)
		}
		// Each variant is a PNG whose corner pixel is its theme's background.
		for _, th := range Themes() {
			f, err := os.Open(filepath.Join(dir, th.Name, name+".png"))
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(f)
			_ = f.Close() // only read
			if err != nil {
				t.Fatalf("%s/%s: %v", th.Name, name, err)
			}
			if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
				t.Errorf("%s/%s: size %v", th.Name, name, b)
			}
			r, g, b, _ := img.At(1, 1).RGBA()
			wr, wg, wb, _ := th.Background.RGBA()
			if r>>8 != wr>>8 || g>>8 != wg>>8 || b>>8 != wb>>8 {
				t.Errorf("%s/%s: corner pixel %d,%d,%d, want the theme background", th.Name, name, r>>8, g>>8, b>>8)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		c    Chart
		want string
	}{
		{"no categories", Chart{}, "no categories"},
		{"short series", Chart{Categories: []string{"a", "b"}, Bars: []Series{{Name: "s", Values: []float64{1}}}}, "has 1 values for 2"},
		{"log zero", Chart{Categories: []string{"a"}, LogY: true, Ranges: []Range{{Name: "r", Values: []float64{0}}}}, "log axis"},
		{"log bars", Chart{Categories: []string{"a"}, LogY: true, Bars: []Series{{Name: "s", Values: []float64{1}}}}, "bars cannot"},
		{"boxes count", Chart{Categories: []string{"a", "b"}, Boxes: []Box{{}}}, "1 boxes for 2"},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestPicture(t *testing.T) {
	got := Picture("Throughput", Paths{Light: "charts/light/t.png", Dark: "charts/dark/t.png"})
	for _, want := range []string{
		`<source media="(prefers-color-scheme: dark)" srcset="charts/dark/t.png">`,
		`<img alt="Throughput" src="charts/light/t.png">`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Picture lacks %q:\n%s", want, got)
		}
	}
}
