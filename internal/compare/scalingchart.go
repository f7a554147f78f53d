package compare

import (
	"fmt"
	"image"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/envelope-dev/envelope/internal/chart"
)

// WriteChart draws the measured throughput and the fitted USL curve, with
// a marker at the linear-scaling limit and the peak (without a fit: the
// measured throughput and the line of linear scaling from the lowest
// level), into
// dir/light/name.png and dir/dark/name.png (the report themes). The
// chart package draws on category axes; a fitted curve needs a numeric
// X axis, so this chart is drawn here with the same themes.
func (s *Scaling) WriteChart(dir, name string) (chart.Paths, error) {
	var ps chart.Paths
	for _, t := range chart.Themes() {
		p, err := s.plot(t)
		if err != nil {
			return ps, err
		}
		path := filepath.Join(dir, t.Name, name+".png")
		if err := chart.RenderPlot(p, scalingWidth, scalingHeight, path); err != nil {
			return ps, err
		}
		rel := filepath.ToSlash(filepath.Join(filepath.Base(dir), t.Name, name+".png"))
		if t.Name == chart.Dark.Name {
			ps.Dark = rel
		} else {
			ps.Light = rel
		}
	}
	return ps, nil
}

// Scaling chart size in points, as the chart package's default.
const scalingWidth, scalingHeight = 640, 360

// drawn is the chart as WriteChart writes it in theme t, with its
// layout.
func (s *Scaling) drawn(t chart.Theme) (image.Image, *chart.Layout, error) {
	p, err := s.plot(t)
	if err != nil {
		return nil, nil, err
	}
	img, l := chart.DrawPlot(p, scalingWidth, scalingHeight)
	return img, l, nil
}

func (s *Scaling) plot(t chart.Theme) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Throughput by load level (USL fit)"
	if s.Fit == nil {
		p.Title.Text = fmt.Sprintf("Throughput by load level (%d levels: no USL fit)", len(s.Levels))
	}
	p.X.Label.Text = s.Unit
	p.Y.Label.Text = "req/s"
	p.BackgroundColor = t.Background
	p.Title.TextStyle.Color = t.Foreground
	p.Legend.TextStyle.Color = t.Foreground
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Color = t.Foreground
		a.Label.TextStyle.Color = t.Foreground
		a.Tick.Color = t.Foreground
		a.Tick.Label.Color = t.Foreground
		a.Tick.Marker = chart.Ticks{}
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = t.Grid, t.Grid
	p.Add(grid)

	maxLevel := s.Points[len(s.Points)-1].Level
	hi := maxLevel * 1.15
	if !math.IsInf(s.Peak, 1) && s.Peak > maxLevel && s.Peak < 2*maxLevel {
		hi = s.Peak * 1.1
	}
	const steps = 200
	curve := make(plotter.XYs, 0, steps+1)
	// Linear scaling: λN with a fit, else from the lowest level's
	// throughput per unit of load.
	slope, idealName := s.Levels[0].PerUnit, "linear from the lowest level"
	if s.Fit != nil {
		slope, idealName = s.Fit.Lambda, "linear (λN)"
		for i := 0; i <= steps; i++ {
			n := 1 + (hi-1)*float64(i)/steps
			if n <= 0 {
				continue
			}
			curve = append(curve, plotter.XY{X: n, Y: s.Fit.Throughput(n)})
		}
	}
	ideal := plotter.XYs{{X: 0, Y: 0}, {X: hi, Y: slope * hi}}
	meas := make(plotter.XYs, len(s.Points))
	ymax := 0.0
	for i, pt := range s.Points {
		meas[i] = plotter.XY{X: pt.Level, Y: pt.Throughput}
		ymax = math.Max(ymax, pt.Throughput)
	}
	for _, c := range curve {
		ymax = math.Max(ymax, c.Y)
	}
	lin, err := plotter.NewLine(ideal)
	if err != nil {
		return nil, err
	}
	lin.Color = t.Grid
	lin.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(lin)
	p.Legend.Add(idealName, lin)
	if s.Fit != nil {
		fit, err := plotter.NewLine(curve)
		if err != nil {
			return nil, err
		}
		fit.Color = t.Palette[0]
		fit.Width = vg.Points(2)
		p.Add(fit)
		p.Legend.Add(fmt.Sprintf("USL σ=%.3g κ=%.3g", s.Fit.Sigma, s.Fit.Kappa), fit)
	}
	if s.Fit != nil && s.LinearLimit <= hi {
		v, err := plotter.NewLine(plotter.XYs{{X: s.LinearLimit, Y: 0}, {X: s.LinearLimit, Y: ymax * 1.05}})
		if err != nil {
			return nil, err
		}
		v.Color = t.Palette[3]
		v.Width = vg.Points(2)
		v.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
		p.Add(v)
		p.Legend.Add(fmt.Sprintf("%.0f%% efficiency at %.0f", 100*s.Efficiency, s.LinearLimit), v)
	}
	sc, err := plotter.NewScatter(meas)
	if err != nil {
		return nil, err
	}
	sc.Color = t.Palette[1]
	sc.Shape = draw.CircleGlyph{}
	sc.Radius = vg.Points(3.5)
	p.Add(sc) // last: no line hides a measured run
	p.Legend.Add("measured", sc)
	p.X.Min, p.X.Max = 0, hi
	p.Y.Min, p.Y.Max = 0, ymax*1.1
	return p, nil
}
