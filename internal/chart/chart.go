// Package chart draws the small PNG charts the Markdown reports embed:
// grouped bars, lines, value ranges (a marker with a min–max whisker) and
// five-number boxes, each with optional horizontal reference bands, in a
// light and a dark theme. A report writes both variants and references
// them with a <picture> element (see Picture), so the chart follows the
// reader's colour scheme. Every chart has its title inside the image and
// its legend in a column beside the plot, where it covers nothing.
//
// Draw returns a chart's image with its Layout: where the title, the
// legend's entries and the data area lie, and the pixel each data value
// is drawn at, so a test can check that a value is drawn at its place
// (CheckColour, CheckBand, CheckEmpty) and that nothing overlaps (Check).
//
//	c := chart.Chart{Title: "Throughput per run", YLabel: "req/s",
//		Categories: []string{"run-1", "run-2"},
//		Bars: []chart.Series{{Name: "http_reqs rate", Values: []float64{56.0, 56.2}}},
//		Bands: []chart.Band{{Name: "band", Low: 55.9, High: 56.3}}}
//	paths, err := chart.WriteThemed(c, "charts", "throughput")
package chart

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Theme is a colour scheme.
type Theme struct {
	Name       string // folder name: "light" or "dark"
	Background color.Color
	Foreground color.Color // text, axes, ticks
	Grid       color.Color
	Palette    []color.Color // series colours, in order
	// BandFill is the fill of reference bands; BandLine their edges.
	BandFill, BandLine []color.Color
}

func rgb(h uint32) color.RGBA {
	return color.RGBA{uint8(h >> 16), uint8(h >> 8), uint8(h), 0xff}
}

func rgba(h uint32, a uint8) color.NRGBA {
	return color.NRGBA{uint8(h >> 16), uint8(h >> 8), uint8(h), a}
}

// bandColours are the fill and edge of the i-th band of hue h (see
// Band.Hue): a palette hue is filled at the opacity of the theme's
// first band fill.
func (t Theme) bandColours(i, h int) (fill, line color.Color) {
	if h <= 0 {
		return t.BandFill[i%len(t.BandFill)], t.BandLine[i%len(t.BandLine)]
	}
	line = t.Palette[(h-1)%len(t.Palette)]
	c := color.NRGBAModel.Convert(line).(color.NRGBA)
	c.A = color.NRGBAModel.Convert(t.BandFill[0]).(color.NRGBA).A
	return c, line
}

// BandFill is the colour band i of c is filled with in theme t, before
// it is laid over the background (see Over).
func (c Chart) BandFill(t Theme, i int) color.Color {
	fill, _ := t.bandColours(i, c.Bands[i].Hue)
	return fill
}

// RangeColour is the colour of range i's markers in theme t.
func (c Chart) RangeColour(t Theme, i int) color.Color {
	if h := c.Ranges[i].Hue; h > 0 {
		return t.Palette[(h-1)%len(t.Palette)]
	}
	return t.Palette[i%len(t.Palette)]
}

// Light and Dark are the two themes the reports write. Their series
// colours are the same hues, lighter on the dark background.
var (
	Light = Theme{
		Name: "light", Background: rgb(0xffffff), Foreground: rgb(0x1f2328), Grid: rgb(0xd0d7de),
		Palette:  []color.Color{rgb(0x0969da), rgb(0xbf3989), rgb(0x1a7f37), rgb(0x9a6700), rgb(0x8250df), rgb(0xcf222e)},
		BandFill: []color.Color{rgba(0x0969da, 0x30), rgba(0xbf3989, 0x30), rgba(0x1a7f37, 0x30), rgba(0x9a6700, 0x30)},
		BandLine: []color.Color{rgb(0x0969da), rgb(0xbf3989), rgb(0x1a7f37), rgb(0x9a6700)},
	}
	Dark = Theme{
		Name: "dark", Background: rgb(0x0d1117), Foreground: rgb(0xe6edf3), Grid: rgb(0x30363d),
		Palette:  []color.Color{rgb(0x58a6ff), rgb(0xf778ba), rgb(0x3fb950), rgb(0xd29922), rgb(0xbc8cff), rgb(0xff7b72)},
		BandFill: []color.Color{rgba(0x58a6ff, 0x38), rgba(0xf778ba, 0x38), rgba(0x3fb950, 0x38), rgba(0xd29922, 0x38)},
		BandLine: []color.Color{rgb(0x58a6ff), rgb(0xf778ba), rgb(0x3fb950), rgb(0xd29922)},
	}
)

// Themes lists the themes WriteThemed writes.
func Themes() []Theme { return []Theme{Light, Dark} }

// Series is one named value per category (bars, lines). A line's NaN
// values are gaps: the line is drawn over the runs of values between
// them.
type Series struct {
	Name   string
	Values []float64
	// Dashed draws a line dashed and without markers: a level the chart
	// shows as uncertain.
	Dashed bool
}

// Range is one named value per category with a low–high whisker: a
// figure and its band across runs, or a run's value and its own
// interval. Low/High may be nil (marker only). A NaN value draws
// nothing at its category.
type Range struct {
	Name      string
	Values    []float64
	Low, High []float64
	// Hue picks the colour: 0 the range's place among the ranges, k > 0
	// the theme's palette colour k (1-based), as Band.Hue.
	Hue int
}

// Box is a five-number summary drawn as a box (Q1–Q3, a line at the
// median) with whiskers to Low and High.
type Box struct {
	Low, Q1, Median, Q3, High float64
}

// Band is a horizontal reference band (Low == High draws a line).
type Band struct {
	Name      string
	Low, High float64
	// From is the first category the band covers; the band runs from it
	// to the last. 0 covers every category.
	From int
	// Hue picks the colour: 0 the band's place among the bands, k > 0
	// the theme's palette colour k (1-based), so a band can share the
	// hue of the series it bounds or stand apart from every other.
	Hue int
}

// Chart is what to draw. Exactly one of Bars, Lines, Ranges or Boxes is
// usually set; Bands go behind any of them. Categories label the X axis.
type Chart struct {
	Title, XLabel, YLabel string
	Categories            []string
	Bars                  []Series
	Lines                 []Series
	Ranges                []Range
	Boxes                 []Box // one per category
	Bands                 []Band
	Points                []Points // marked values, over the lines
	LogY                  bool     // logarithmic Y axis (all values must be > 0)
	// ZeroY starts a linear Y axis at 0: a rate's differences read at
	// their size against the whole rate.
	ZeroY bool
	// Width and Height in points; 0 gives 640×360 (a 16:9 PNG at 96 dpi
	// is 853×480 pixels).
	Width, Height vg.Length
}

// Validate reports a chart that cannot be drawn.
func (c Chart) Validate() error {
	if len(c.Categories) == 0 {
		return errors.New("chart: no categories")
	}
	n := len(c.Categories)
	for _, s := range append(append([]Series{}, c.Bars...), c.Lines...) {
		if len(s.Values) != n {
			return fmt.Errorf("chart %q: series %q has %d values for %d categories", c.Title, s.Name, len(s.Values), n)
		}
	}
	for _, r := range c.Ranges {
		if len(r.Values) != n || (r.Low != nil && len(r.Low) != n) || (r.High != nil && len(r.High) != n) {
			return fmt.Errorf("chart %q: range %q does not have %d values", c.Title, r.Name, n)
		}
	}
	if len(c.Boxes) > 0 && len(c.Boxes) != n {
		return fmt.Errorf("chart %q: %d boxes for %d categories", c.Title, len(c.Boxes), n)
	}
	if c.LogY {
		check := func(v float64) error {
			if !(v > 0) && !math.IsNaN(v) {
				return fmt.Errorf("chart %q: value %v cannot be drawn on a log axis", c.Title, v)
			}
			return nil
		}
		for _, r := range c.Ranges {
			for i, v := range r.Values {
				if err := check(v); err != nil {
					return err
				}
				if r.Low != nil {
					if err := check(r.Low[i]); err != nil {
						return err
					}
				}
			}
		}
		for _, b := range c.Boxes {
			if err := check(b.Low); err != nil {
				return err
			}
		}
		if len(c.Bars) > 0 {
			return fmt.Errorf("chart %q: bars cannot be drawn on a log axis", c.Title)
		}
	}
	return nil
}

// Plot builds the gonum plot of c in theme t.
func (c Chart) Plot(t Theme) (*plot.Plot, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := plot.New()
	applyTheme(p, t)
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.Y.Tick.Marker = Ticks{}
	if c.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Title.Padding = vg.Points(6)
	g := plotter.NewGrid()
	g.Vertical.Color = nil
	g.Horizontal.Color = t.Grid
	p.Add(g)
	n := len(c.Categories)
	for _, add := range []func(*plot.Plot, Theme) error{c.addBands, c.addBars, c.addLines, c.addRanges, c.addPoints} {
		if err := add(p, t); err != nil {
			return nil, err
		}
	}
	if len(c.Boxes) > 0 {
		p.Add(&boxes{items: c.Boxes, line: t.Foreground, fill: t.BandFill[0], median: t.Palette[0]})
	}
	p.NominalX(c.Categories...)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	if !c.LogY && len(c.Bars) == 0 {
		// Pad the Y range so markers and bands do not sit on the frame.
		// The legend lies beside the plot, so no room is kept for it.
		lo, hi := p.Y.Min, p.Y.Max
		if c.ZeroY {
			lo = math.Min(lo, 0)
		}
		pad := (hi - lo) * 0.08
		if pad == 0 {
			pad = math.Max(1, math.Abs(hi)*0.05)
		}
		p.Y.Min, p.Y.Max = lo-pad, hi+pad
		if c.ZeroY && lo >= 0 {
			p.Y.Min = 0
		}
	}
	if c.LogY {
		// Same on a log axis, in factors.
		p.Y.Min, p.Y.Max = p.Y.Min/1.3, p.Y.Max*1.3
	}
	if len(c.Bars) > 0 && p.Y.Min > 0 {
		p.Y.Min = 0
	}
	p.Legend.Top = true
	return p, nil
}

// addBands draws the bands; Plot adds them first, so the data sits on top.
func (c Chart) addBands(p *plot.Plot, t Theme) error {
	n := len(c.Categories)
	for i, b := range c.Bands {
		if b.From < 0 || b.From >= n {
			return fmt.Errorf("chart %q: band %q starts at category %d of %d", c.Title, b.Name, b.From, n)
		}
		x0, x1 := float64(b.From)-0.5, float64(n)-0.5
		fill, line := t.bandColours(i, b.Hue)
		if b.Low == b.High {
			// A line: solid and wider, so it does not read as a band's edge.
			l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: b.Low}, {X: x1, Y: b.Low}})
			if err != nil {
				return err
			}
			l.Color, l.Width = line, vg.Points(1.5)
			p.Add(l)
			if b.Name != "" {
				p.Legend.Add(b.Name, l)
			}
			continue
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: b.Low}, {X: x1, Y: b.Low}, {X: x1, Y: b.High}, {X: x0, Y: b.High}})
		if err != nil {
			return err
		}
		poly.Color = fill
		poly.LineStyle = draw.LineStyle{Color: line, Width: vg.Points(0.75),
			Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
		p.Add(poly)
		if b.Name != "" {
			p.Legend.Add(b.Name, poly)
		}
	}
	return nil
}

// addBars draws the bar series side by side in each category.
func (c Chart) addBars(p *plot.Plot, t Theme) error {
	n := len(c.Categories)
	w := vg.Points(min(40, 300/float64(max(1, n*max(1, len(c.Bars))))))
	for i, s := range c.Bars {
		bc, err := plotter.NewBarChart(plotter.Values(s.Values), w)
		if err != nil {
			return err
		}
		bc.Color = t.Palette[i%len(t.Palette)]
		bc.LineStyle.Width = 0
		bc.Offset = vg.Length(float64(i)-float64(len(c.Bars)-1)/2) * w
		p.Add(bc)
		p.Legend.Add(s.Name, bc)
	}
	return nil
}

// addLines draws the line series with their points, each run of values
// between gaps (NaN) as its own line.
func (c Chart) addLines(p *plot.Plot, t Theme) error {
	for i, s := range c.Lines {
		col := t.Palette[i%len(t.Palette)]
		legend := false
		for lo := 0; lo < len(s.Values); {
			if math.IsNaN(s.Values[lo]) {
				lo++
				continue
			}
			hi := lo
			for hi < len(s.Values) && !math.IsNaN(s.Values[hi]) {
				hi++
			}
			xys := make(plotter.XYs, hi-lo)
			for j := lo; j < hi; j++ {
				xys[j-lo] = plotter.XY{X: float64(j), Y: s.Values[j]}
			}
			lo = hi
			l, sc, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			l.Color, sc.Color = col, col
			l.Width = vg.Points(1.5)
			sc.Shape = draw.CircleGlyph{}
			if s.Dashed {
				l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
				p.Add(l)
			} else {
				p.Add(l, sc)
			}
			if !legend {
				legend = true
				if s.Dashed {
					p.Legend.Add(s.Name, l)
				} else {
					p.Legend.Add(s.Name, l, sc)
				}
			}
		}
	}
	return nil
}

// RangeX is the x at which range r's value at category j is drawn: the
// ranges of a category spread apart around it.
func (c Chart) RangeX(r, j int) float64 {
	spread := 0.6 / float64(max(1, len(c.Ranges)))
	return float64(j) + (float64(r)-float64(len(c.Ranges)-1)/2)*spread
}

// addRanges draws each range series: its values with their low–high bars, spread apart within a category.
func (c Chart) addRanges(p *plot.Plot, t Theme) error {
	for i, r := range c.Ranges {
		d := rangeData{}
		whiskers := false
		for j, v := range r.Values {
			if math.IsNaN(v) {
				continue
			}
			lo, hi := v, v
			if r.Low != nil {
				lo = r.Low[j]
			}
			if r.High != nil {
				hi = r.High[j]
			}
			whiskers = whiskers || lo != v || hi != v
			d = append(d, rangePoint{x: c.RangeX(i, j), y: v, lo: lo, hi: hi})
		}
		if len(d) == 0 {
			continue
		}
		col := c.RangeColour(t, i)
		sc, err := plotter.NewScatter(d)
		if err != nil {
			return err
		}
		sc.Color = col
		sc.Shape = draw.CircleGlyph{}
		sc.Radius = vg.Points(3)
		if whiskers {
			eb, err := plotter.NewYErrorBars(d)
			if err != nil {
				return err
			}
			eb.Color = col
			eb.Width = vg.Points(1.5)
			eb.CapWidth = vg.Points(6)
			p.Add(eb, sc)
			p.Legend.Add(r.Name, whiskerThumb{eb.LineStyle}, sc)
			continue
		}
		p.Add(sc)
		p.Legend.Add(r.Name, sc)
	}
	return nil
}

// Render writes c as a PNG in theme t.
func Render(c Chart, t Theme, path string) error {
	p, err := c.Plot(t)
	if err != nil {
		return err
	}
	w, h := c.Size()
	return RenderPlot(p, w, h, path)
}

// RenderPlot writes a gonum plot of w×h points to path as WritePlotPNG
// lays it out, creating path's folder.
func RenderPlot(p *plot.Plot, w, h vg.Length, path string) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if e := f.Close(); err == nil {
			err = e
		}
	}()
	return WritePlotPNG(f, p, w, h)
}

// WritePNG writes c as a PNG in theme t to w.
func WritePNG(w io.Writer, c Chart, t Theme) error {
	p, err := c.Plot(t)
	if err != nil {
		return err
	}
	cw, ch := c.Size()
	return WritePlotPNG(w, p, cw, ch)
}

// Ticks are gonum's default ticks with labels printed at the precision
// the tick values themselves need: an axis from 55.9 to 56.3 reads
// 55.9, 56.0, 56.1, … rather than 56, 56, 56, and ticks at 54.95,
// 55.10, 55.25 read so, not 54.9, 55.1, 55.2 (a label one decimal short
// of its tick misreads every point by up to half a step). All labels of
// an axis share one precision.
type Ticks struct{}

// maxPrec bounds the decimals a label gets: a tick needing more is
// float noise around a rounder value.
const maxPrec = 10

func (Ticks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	var major []float64
	for _, t := range ts {
		if t.Label != "" {
			major = append(major, t.Value)
		}
	}
	if len(major) < 2 {
		return ts
	}
	step := math.Inf(1)
	for i := 1; i < len(major); i++ {
		step = math.Min(step, major[i]-major[i-1])
	}
	if !(step > 0) || math.IsInf(step, 0) {
		return ts
	}
	// Enough decimals to tell neighbours apart, and then enough for
	// every label to read back as its tick's value.
	prec := max(0, int(math.Ceil(-math.Log10(step)-1e-9)))
	for _, v := range major {
		for prec < maxPrec && !readsAs(strconv.FormatFloat(v, 'f', prec, 64), v, step) {
			prec++
		}
	}
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', prec, 64)
		}
	}
	return ts
}

// readsAs reports whether label is the number v, up to float noise far
// below the axis's tick step.
func readsAs(label string, v, step float64) bool {
	x, err := strconv.ParseFloat(label, 64)
	return err == nil && math.Abs(x-v) <= 1e-6*step
}

// CheckTicks reads back every tick label the plot's numeric axes will
// draw over their final ranges and reports the first that is not the
// number at its tick's position. Category axes (labels that are names)
// are skipped. The tests of the packages that draw charts call it on
// every chart; it lives beside Ticks so that both judge a label with the
// same readsAs.
func CheckTicks(p *plot.Plot) error {
	for _, ax := range []struct {
		name string
		a    *plot.Axis
	}{{"x", &p.X}, {"y", &p.Y}} {
		if _, names := ax.a.Tick.Marker.(plot.ConstantTicks); names {
			continue // category names at 0, 1, 2, …
		}
		ts := ax.a.Tick.Marker.Ticks(ax.a.Min, ax.a.Max)
		var vals []float64
		numeric := true
		for _, t := range ts {
			if t.Label == "" {
				continue
			}
			if _, err := strconv.ParseFloat(t.Label, 64); err != nil {
				numeric = false
				break
			}
			vals = append(vals, t.Value)
		}
		if !numeric {
			continue
		}
		if len(vals) < 2 {
			return fmt.Errorf("chart %q: %s axis %g–%g has %d labelled ticks", p.Title.Text, ax.name, ax.a.Min, ax.a.Max, len(vals))
		}
		step := math.Inf(1)
		for i := 1; i < len(vals); i++ {
			step = math.Min(step, math.Abs(vals[i]-vals[i-1]))
		}
		if _, log := ax.a.Scale.(plot.LogScale); log {
			step = math.Abs(vals[0]) // a log axis: compare relative to the smallest value
		}
		for _, t := range ts {
			if t.Label != "" && !readsAs(t.Label, t.Value, step) {
				return fmt.Errorf("chart %q: %s-axis tick at %v is labelled %q", p.Title.Text, ax.name, t.Value, t.Label)
			}
		}
	}
	return nil
}

// Paths are the files WriteThemed wrote, relative to the report.
type Paths struct {
	Light, Dark string
}

// CheckThemedTicks runs CheckTicks on c's plot in every theme
// WriteThemed draws, and reports every theme's misread label.
func CheckThemedTicks(c Chart) error {
	var errs []error
	for _, th := range Themes() {
		p, err := c.Plot(th)
		if err != nil {
			return err
		}
		errs = append(errs, CheckTicks(p))
	}
	return errors.Join(errs...)
}

// WriteThemed writes dir/light/name.png and dir/dark/name.png. The paths
// it returns are relative to dir's parent, where the report sits:
// "charts/light/name.png" for dir "out/charts".
func WriteThemed(c Chart, dir, name string) (Paths, error) {
	var ps Paths
	for _, t := range Themes() {
		rel := filepath.ToSlash(filepath.Join(filepath.Base(dir), t.Name, name+".png"))
		if err := Render(c, t, filepath.Join(dir, t.Name, name+".png")); err != nil {
			return Paths{}, err
		}
		if t.Name == Dark.Name {
			ps.Dark = rel
		} else {
			ps.Light = rel
		}
	}
	return ps, nil
}

// Picture is the Markdown/HTML that shows the dark variant in dark mode
// and the light one otherwise.
func Picture(alt string, p Paths) string {
	return fmt.Sprintf("<picture>\n  <source media=\"(prefers-color-scheme: dark)\" srcset=\"%s\">\n  <source media=\"(prefers-color-scheme: light)\" srcset=\"%s\">\n  <img alt=\"%s\" src=\"%s\">\n</picture>\n",
		p.Dark, p.Light, alt, p.Light)
}

func applyTheme(p *plot.Plot, t Theme) {
	p.BackgroundColor = t.Background
	p.Title.TextStyle.Color = t.Foreground
	p.Legend.TextStyle.Color = t.Foreground
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Color = t.Foreground
		a.Label.TextStyle.Color = t.Foreground
		a.Tick.Color = t.Foreground
		a.Tick.Label.Color = t.Foreground
	}
}

// whiskerThumb is a legend swatch of a whisker: a vertical bar with caps.
type whiskerThumb struct{ ls draw.LineStyle }

func (w whiskerThumb) Thumbnail(c *draw.Canvas) {
	x := c.Center().X
	lo, hi := c.Min.Y, c.Max.Y
	cap := vg.Points(3)
	c.StrokeLine2(w.ls, x, lo, x, hi)
	c.StrokeLine2(w.ls, x-cap, lo, x+cap, lo)
	c.StrokeLine2(w.ls, x-cap, hi, x+cap, hi)
}

type rangePoint struct{ x, y, lo, hi float64 }

type rangeData []rangePoint

func (d rangeData) Len() int                        { return len(d) }
func (d rangeData) XY(i int) (float64, float64)     { return d[i].x, d[i].y }
func (d rangeData) YError(i int) (float64, float64) { return d[i].y - d[i].lo, d[i].hi - d[i].y }

// boxes draws five-number boxes, one per category.
type boxes struct {
	items              []Box
	line, fill, median color.Color
}

func (b *boxes) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	// 1.5 points is two pixels: a line covers whole pixels wherever it falls.
	ls := draw.LineStyle{Color: b.line, Width: vg.Points(1.5)}
	half := vg.Points(14)
	for i, bx := range b.items {
		x := trX(float64(i))
		q1, q3, md := trY(bx.Q1), trY(bx.Q3), trY(bx.Median)
		c.FillPolygon(b.fill, []vg.Point{{X: x - half, Y: q1}, {X: x + half, Y: q1}, {X: x + half, Y: q3}, {X: x - half, Y: q3}})
		c.StrokeLines(ls, []vg.Point{{X: x - half, Y: q1}, {X: x + half, Y: q1}, {X: x + half, Y: q3}, {X: x - half, Y: q3}, {X: x - half, Y: q1}})
		c.StrokeLine2(draw.LineStyle{Color: b.median, Width: vg.Points(2)}, x-half, md, x+half, md)
		c.StrokeLine2(ls, x, q3, x, trY(bx.High))
		c.StrokeLine2(ls, x, q1, x, trY(bx.Low))
		c.StrokeLine2(ls, x-half/2, trY(bx.High), x+half/2, trY(bx.High))
		c.StrokeLine2(ls, x-half/2, trY(bx.Low), x+half/2, trY(bx.Low))
	}
}

func (b *boxes) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, bx := range b.items {
		ymin = math.Min(ymin, bx.Low)
		ymax = math.Max(ymax, bx.High)
	}
	return -0.5, float64(len(b.items)) - 0.5, ymin, ymax
}
