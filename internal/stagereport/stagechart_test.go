package stagereport

import (
	"testing"

	"github.com/envelope-dev/envelope/internal/chart"
)

// The latency-distribution chart of a real run draws each endpoint's
// box between its quartiles (the fill inside, none beyond), its median
// line at its median and its whiskers towards p5 and p99, in both
// themes, with its title inside the image.
func TestLatencyChartDrawsValuesInPlace(t *testing.T) {
	r, _ := runAReport(t)
	c, err := r.LatencyChart()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Boxes) == 0 {
		t.Fatal("no box")
	}
	whiskers := 0
	for _, th := range chart.Themes() {
		img, l, err := c.Draw(th)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Check(); err != nil {
			t.Errorf("%s: %v", th.Name, err)
		}
		if l.Title.Empty() {
			t.Errorf("%s: no title", th.Name)
		}
		for i, b := range c.Boxes {
			x := float64(i)
			if err := l.CheckColour(img, x, b.Median, th.Palette[0]); err != nil {
				t.Errorf("%s: %s median: %v", th.Name, c.Categories[i], err)
			}
			// The box's middle column: its fill, crossed by the median line only.
			if err := l.CheckBand(img, x, b.Q1, b.Q3, th.BandFill[0], th.Background); err != nil {
				t.Errorf("%s: %s box: %v", th.Name, c.Categories[i], err)
			}
			for _, w := range [][2]float64{{b.Q3, b.High}, {b.Low, b.Q1}} {
				if l.Pixel(x, w[0]).Y-l.Pixel(x, w[1]).Y < 4 && l.Pixel(x, w[1]).Y-l.Pixel(x, w[0]).Y < 4 {
					continue // a whisker too short to find apart from the box
				}
				whiskers++
				if err := l.CheckColour(img, x, (w[0]+w[1])/2, th.Foreground); err != nil {
					t.Errorf("%s: %s whisker %v–%v: %v", th.Name, c.Categories[i], w[0], w[1], err)
				}
			}
		}
	}
	if whiskers == 0 {
		t.Error("no whisker long enough to check")
	}
}
