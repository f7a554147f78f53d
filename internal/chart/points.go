package chart

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Points marks single values at some categories, drawn over the lines:
// a series' change points or its outlier runs.
type Points struct {
	Name string
	// At are the categories' 0-based indices, Values the values there.
	At     []int
	Values []float64
	// Shape is the marker: "triangle", "cross" or "ring" (default).
	Shape string
}

func (pt Points) validate(c Chart) error {
	if len(pt.At) != len(pt.Values) {
		return fmt.Errorf("chart %q: points %q: %d places for %d values", c.Title, pt.Name, len(pt.At), len(pt.Values))
	}
	for _, i := range pt.At {
		if i < 0 || i >= len(c.Categories) {
			return fmt.Errorf("chart %q: points %q: category %d of %d", c.Title, pt.Name, i, len(c.Categories))
		}
	}
	return nil
}

// addPoints draws the marked points in the palette's colours after the
// lines'.
func (c Chart) addPoints(p *plot.Plot, t Theme) error {
	for i, pt := range c.Points {
		if err := pt.validate(c); err != nil {
			return err
		}
		if len(pt.At) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(pt.At))
		for j, at := range pt.At {
			xys[j] = plotter.XY{X: float64(at), Y: pt.Values[j]}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		sc.Color = t.Palette[(len(c.Lines)+i)%len(t.Palette)]
		sc.Radius = vg.Points(5)
		switch pt.Shape {
		case "triangle":
			sc.Shape = draw.PyramidGlyph{}
		case "cross":
			sc.Shape = draw.CrossGlyph{}
			sc.Radius = vg.Points(7)
		default:
			sc.Shape = draw.RingGlyph{}
		}
		p.Add(sc)
		p.Legend.Add(pt.Name, sc)
	}
	return nil
}
