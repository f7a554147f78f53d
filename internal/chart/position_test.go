package chart

import (
	"bytes"
	"image"
	"math"
	"testing"
)

// The image Draw returns is the PNG WritePNG writes, pixel for pixel, so
// a Layout read from Draw locates values in the written file.
func TestDrawIsWritePNG(t *testing.T) {
	c := positionChart()
	for _, th := range Themes() {
		img, l, err := c.Draw(th)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WritePNG(&b, c, th); err != nil {
			t.Fatal(err)
		}
		png, err := DecodePNG(b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if png.Bounds().Size() != l.Size || img.Bounds() != png.Bounds() {
			t.Fatalf("%s: PNG %v, layout %v, image %v", th.Name, png.Bounds(), l.Size, img.Bounds())
		}
		for y := 0; y < l.Size.Y; y++ {
			for x := 0; x < l.Size.X; x++ {
				if ColourAt(img, image.Pt(x, y)) != ColourAt(png, image.Pt(x, y)) {
					t.Fatalf("%s: pixel (%d,%d) differs between Draw and WritePNG", th.Name, x, y)
				}
			}
		}
	}
}

// positionChart has markers with whiskers, a band over every category,
// a band from the third category on, and a line band.
func positionChart() Chart {
	return Chart{Title: "Throughput per run", YLabel: "req/s",
		Categories: []string{"run-1", "run-2", "run-3", "run-4", "mean"},
		Ranges: []Range{
			{Name: "run rate", Values: []float64{52, 58, 55, 56, math.NaN()}},
			{Name: "mean, 95% CI", Values: []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), 55.25}, Low: []float64{0, 0, 0, 0, 53}, High: []float64{0, 0, 0, 0, 57.5}, Hue: 2},
		},
		Bands: []Band{
			{Name: "band 52–58", Low: 52, High: 58, Hue: 1},
			{Name: "later band 40–44", Low: 40, High: 44, From: 2, Hue: 3},
			{Name: "floor 45", Low: 45, High: 45, Hue: 4},
		}}
}

// Each marker, band and line is found at the pixel its value maps to,
// in both themes; a band starting at a later category leaves the ones
// before it unfilled; the legend and the title overlap nothing.
func TestLayoutFindsEveryValue(t *testing.T) {
	c := positionChart()
	for _, th := range Themes() {
		img, l, err := c.Draw(th)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Check(); err != nil {
			t.Errorf("%s: %v", th.Name, err)
		}
		if len(l.Legend) != 5 {
			t.Errorf("%s: %d legend entries, want 5", th.Name, len(l.Legend))
		}
		for i, r := range c.Ranges {
			for j, v := range r.Values {
				if math.IsNaN(v) {
					continue
				}
				if err := l.CheckColour(img, c.RangeX(i, j), v, c.RangeColour(th, i)); err != nil {
					t.Errorf("%s: %s at %s: %v", th.Name, r.Name, c.Categories[j], err)
				}
				if r.Low != nil {
					// The whisker's ends, a little inside them.
					for _, w := range []float64{r.Low[j] + 0.2, r.High[j] - 0.2} {
						if err := l.CheckColour(img, c.RangeX(i, j), w, c.RangeColour(th, i)); err != nil {
							t.Errorf("%s: %s whisker at %s: %v", th.Name, r.Name, c.Categories[j], err)
						}
					}
				}
			}
		}
		for i, b := range c.Bands {
			x := float64(b.From) - 0.4 // left of the band's first category's markers
			if b.Low == b.High {
				if err := l.CheckColour(img, x, b.Low, th.Palette[b.Hue-1]); err != nil {
					t.Errorf("%s: line %s: %v", th.Name, b.Name, err)
				}
				continue
			}
			if err := l.CheckBand(img, x, b.Low, b.High, c.BandFill(th, i), th.Background); err != nil {
				t.Errorf("%s: %s: %v", th.Name, b.Name, err)
			}
			for j := 0; j < b.From; j++ {
				if err := l.CheckEmpty(img, float64(j), b.Low, b.High, c.BandFill(th, i), th.Background); err != nil {
					t.Errorf("%s: %s before its first category, at %s: %v", th.Name, b.Name, c.Categories[j], err)
				}
			}
		}
		if !l.Title.In(image.Rectangle{Max: l.Size}) || l.Title.Dy() < 8 {
			t.Errorf("%s: title box %v in image %v", th.Name, l.Title, l.Size)
		}
	}
}

// Check refuses legends that overlap, leave the image or cover the
// title or the data.
func TestLayoutCheck(t *testing.T) {
	ok := Layout{Size: image.Pt(100, 100), Title: image.Rect(20, 2, 80, 10), Data: image.Rect(10, 15, 60, 90),
		Legend: []image.Rectangle{image.Rect(65, 15, 95, 25), image.Rect(65, 27, 95, 37)}}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Layout){
		"entries overlap":      func(l *Layout) { l.Legend[1] = image.Rect(65, 20, 95, 30) },
		"over the data":        func(l *Layout) { l.Legend[0] = image.Rect(55, 15, 95, 25) },
		"over the title":       func(l *Layout) { l.Legend[0] = image.Rect(65, 5, 95, 25) },
		"title cut":            func(l *Layout) { l.Title = image.Rect(20, -3, 80, 10) },
		"title over the data":  func(l *Layout) { l.Title = image.Rect(20, 2, 80, 16) },
		"legend off the right": func(l *Layout) { l.Legend[1] = image.Rect(65, 27, 105, 37) },
	} {
		l := ok
		l.Legend = append([]image.Rectangle{}, ok.Legend...)
		change(&l)
		if l.Check() == nil {
			t.Errorf("%s: Check passed", name)
		}
	}
}

// Lines, their markers, marked points and bars are found at their
// values too: the charts other reports draw (a history by commit, bars)
// can be checked the same way.
func TestLayoutFindsLinesPointsAndBars(t *testing.T) {
	cats := []string{"c1", "c2", "c3", "c4"}
	lines := Chart{Title: "p95 by commit", Categories: cats,
		Lines:  []Series{{Name: "run value", Values: []float64{100, 104, 99, 130}}},
		Points: []Points{{Name: "change point", At: []int{3}, Values: []float64{130}, Shape: "triangle"}},
		Bands:  []Band{{Name: "envelope band", Low: 95, High: 106, From: 1}}}
	bars := Chart{Title: "requests", Categories: cats, Bars: []Series{{Name: "requests", Values: []float64{10, 40, 25, 5}}}}
	for _, th := range Themes() {
		img, l, err := lines.Draw(th)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Check(); err != nil {
			t.Errorf("%s: %v", th.Name, err)
		}
		for j, v := range lines.Lines[0].Values[:3] {
			if err := l.CheckColour(img, float64(j), v, th.Palette[0]); err != nil {
				t.Errorf("%s: line at %s: %v", th.Name, cats[j], err)
			}
		}
		// The marked point is drawn over the line's marker, in the next colour.
		if err := l.CheckColour(img, 3, 130, th.Palette[1]); err != nil {
			t.Errorf("%s: change point: %v", th.Name, err)
		}
		if err := l.CheckEmpty(img, -0.4, 95, 106, lines.BandFill(th, 0), th.Background); err != nil {
			t.Errorf("%s: band before its first commit: %v", th.Name, err)
		}
		if err := l.CheckBand(img, 0.6, 95, 106, lines.BandFill(th, 0), th.Background); err != nil {
			t.Errorf("%s: band from its first commit: %v", th.Name, err)
		}
		img, l, err = bars.Draw(th)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range bars.Bars[0].Values {
			// Inside the bar just below its top, and the background just above.
			if err := l.CheckColour(img, float64(j), 0.95*v, th.Palette[0]); err != nil {
				t.Errorf("%s: bar %s: %v", th.Name, cats[j], err)
			}
			if err := l.CheckColour(img, float64(j), v+1, th.Background); err != nil {
				t.Errorf("%s: above bar %s: %v", th.Name, cats[j], err)
			}
		}
	}
}
