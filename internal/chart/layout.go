package chart

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// margin keeps the title off the top edge and the legend inside the
// right edge.
const margin = 8 // points

// titlePadding is the least room between the title and the plot below.
const titlePadding = 6 // points

// legendPadding separates the legend's entries, legendFont is the
// largest size of its text: a legend of several entries must fit beside
// the plot without crowding it.
const (
	legendPadding = 4  // points
	legendFont    = 10 // points
)

// legendGap separates the legend from the plot's area on its left.
const legendGap = 10 // points

// Layout is where the parts of a drawn chart lie in its PNG, in pixels
// (origin at the top left, y growing down), and the map from data
// values to pixels. Every chart is drawn by the same function that
// makes its Layout, so the two cannot disagree.
type Layout struct {
	// Size is the image's width and height.
	Size image.Point
	// Title is the box of the title's text; empty without a title.
	Title image.Rectangle
	// Legend holds one box per legend entry: its swatch and its text.
	Legend []image.Rectangle
	// Data is the area the data is drawn in (inside the axes).
	Data image.Rectangle

	dpi    float64
	height float64 // image height in dots
	trX    func(float64) vg.Length
	trY    func(float64) vg.Length
}

// Pixel is the pixel a data value (x, y) is drawn at: on a category
// axis, x is the category's index (0, 1, 2, …).
func (l *Layout) Pixel(x, y float64) image.Point {
	return image.Point{
		X: int(math.Floor(l.trX(x).Dots(l.dpi))),
		Y: int(math.Floor(l.height - l.trY(y).Dots(l.dpi))),
	}
}

// At is the pixel of value y at category i.
func (l *Layout) At(i int, y float64) image.Point { return l.Pixel(float64(i), y) }

// pixels converts a rectangle in canvas points to the pixels it covers.
func (l *Layout) pixels(r vg.Rectangle) image.Rectangle {
	return image.Rect(
		int(math.Floor(r.Min.X.Dots(l.dpi))), int(math.Floor(l.height-r.Max.Y.Dots(l.dpi))),
		int(math.Ceil(r.Max.X.Dots(l.dpi))), int(math.Ceil(l.height-r.Min.Y.Dots(l.dpi))))
}

// Check reports parts of the layout a reader could not read: a title
// outside the image or over the data, legend entries that overlap each other, the title
// or the data area, or that leave the image.
func (l *Layout) Check() error {
	img := image.Rectangle{Max: l.Size}
	if !l.Title.Empty() && !l.Title.In(img) {
		return fmt.Errorf("title box %v is not inside the image %v", l.Title, img)
	}
	if l.Title.Overlaps(l.Data) {
		return fmt.Errorf("title box %v overlaps the data area %v", l.Title, l.Data)
	}
	for i, a := range l.Legend {
		if !a.In(img) {
			return fmt.Errorf("legend entry %d at %v is not inside the image %v", i, a, img)
		}
		if a.Overlaps(l.Title) {
			return fmt.Errorf("legend entry %d at %v overlaps the title at %v", i, a, l.Title)
		}
		if a.Overlaps(l.Data) {
			return fmt.Errorf("legend entry %d at %v overlaps the data area %v", i, a, l.Data)
		}
		for j, b := range l.Legend[:i] {
			if a.Overlaps(b) {
				return fmt.Errorf("legend entries %d at %v and %d at %v overlap", j, b, i, a)
			}
		}
	}
	return nil
}

// Size is the chart's width and height in points, the defaults filled in.
func (c Chart) Size() (w, h vg.Length) {
	w, h = c.Width, c.Height
	if w == 0 {
		w = 640
	}
	if h == 0 {
		h = 360
	}
	return w, h
}

// Draw draws c in theme t: the image WritePNG encodes, and its layout.
func (c Chart) Draw(t Theme) (image.Image, *Layout, error) {
	p, err := c.Plot(t)
	if err != nil {
		return nil, nil, err
	}
	w, h := c.Size()
	img, l := DrawPlot(p, w, h)
	return img, l, nil
}

// WritePlotPNG writes a gonum plot of w×h points as a PNG laid out as
// every chart of this package is (title at the top, legend on the right
// of the plot, a margin around): for a chart the Chart type cannot
// describe, such as one on a numeric X axis.
func WritePlotPNG(out io.Writer, p *plot.Plot, w, h vg.Length) error {
	cv, _ := drawPlot(p, w, h)
	_, err := vgimg.PngCanvas{Canvas: cv}.WriteTo(out)
	return err
}

// DrawPlot draws a gonum plot as WritePlotPNG writes it and returns the
// image and its layout.
func DrawPlot(p *plot.Plot, w, h vg.Length) (image.Image, *Layout) {
	cv, l := drawPlot(p, w, h)
	return cv.Image(), l
}

// drawPlot draws p on a w×h canvas: a margin on every side, the title
// centred at the top, the legend's entries stacked on the right from
// the top of the data area down, and the axes and data in the rest.
// The legend never sits over the data, whatever the data's shape.
func drawPlot(p *plot.Plot, w, h vg.Length) (*vgimg.Canvas, *Layout) {
	cv := vgimg.New(w, h)
	b := cv.Image().Bounds()
	l := &Layout{Size: image.Point{X: b.Dx(), Y: b.Dy()}, dpi: cv.DPI(), height: float64(b.Dy())}
	spy := &textSpy{CanvasSizer: cv}
	dc := draw.New(spy)
	if p.BackgroundColor != nil {
		dc.SetColor(p.BackgroundColor)
		dc.Fill(dc.Path())
	}
	m := vg.Points(margin)
	c := draw.Crop(dc, m, -m, m, -m)
	if p.Title.Text != "" {
		sty := p.Title.TextStyle
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		at := vg.Point{X: c.Center().X, Y: c.Max.Y}
		c.FillText(sty, at, p.Title.Text)
		r := sty.Rectangle(p.Title.Text)
		l.Title = l.pixels(vg.Rectangle{Min: r.Min.Add(at), Max: r.Max.Add(at)})
		c.Max.Y -= r.Size().Y + max(p.Title.Padding, vg.Points(titlePadding))
	}
	bare := *p
	bare.Title.Text = ""
	bare.Legend = plot.NewLegend()
	leg := p.Legend
	leg.Left, leg.Top, leg.XOffs, leg.YOffs = true, true, 0, 0
	leg.Padding = max(leg.Padding, vg.Points(legendPadding))
	leg.TextStyle.Font.Size = min(leg.TextStyle.Font.Size, vg.Points(legendFont))
	lw := leg.Rectangle(c).Size().X
	if lw > 0 {
		c.Max.X -= lw + vg.Points(legendGap)
	}
	data := bare.DataCanvas(c)
	bare.Draw(c)
	if lw > 0 {
		lc := draw.Canvas{Canvas: spy, Rectangle: vg.Rectangle{
			Min: vg.Point{X: c.Max.X + vg.Points(legendGap), Y: c.Min.Y},
			Max: vg.Point{X: c.Max.X + vg.Points(legendGap) + lw, Y: data.Max.Y},
		}}
		spy.texts = nil
		leg.Draw(lc)
		l.Legend = legendBoxes(leg, lc, spy.texts, l)
	}
	l.Data = l.pixels(data.Rectangle)
	l.trX, l.trY = bare.Transforms(&data)
	return cv, l
}

// legendBoxes are the boxes of the entries leg drew on c (left and top
// aligned): each entry's swatch, at the left of its row as
// plot.Legend.Draw places it, joined with the text it drew.
func legendBoxes(leg plot.Legend, c draw.Canvas, texts []placedText, l *Layout) []image.Rectangle {
	sty := leg.TextStyle
	var enth vg.Length
	for _, t := range texts {
		enth = max(enth, sty.Rectangle(t.s).Max.Y)
	}
	top := c.Max.Y - sty.FontExtents().Descent
	var out []image.Rectangle
	for i, t := range texts {
		row := top - vg.Length(i)*(enth+leg.Padding)
		sw := vg.Rectangle{Min: vg.Point{X: c.Min.X, Y: row - enth}, Max: vg.Point{X: c.Min.X + leg.ThumbnailWidth, Y: row}}
		out = append(out, l.pixels(sw).Union(l.pixels(t.r)))
	}
	return out
}

// placedText is a string drawn on a canvas and its box there.
type placedText struct {
	s string
	r vg.Rectangle
}

// textSpy draws on its canvas and notes the box of every string drawn,
// which is how the legend's entries are found without reaching into
// plot.Legend.
type textSpy struct {
	vg.CanvasSizer
	texts []placedText
}

func (s *textSpy) FillString(f font.Face, pt vg.Point, str string) {
	s.CanvasSizer.FillString(f, pt, str)
	e := f.Extents()
	s.texts = append(s.texts, placedText{s: str, r: vg.Rectangle{
		Min: vg.Point{X: pt.X, Y: pt.Y - e.Descent},
		Max: vg.Point{X: pt.X + f.Width(str), Y: pt.Y + e.Ascent},
	}})
}

// DecodePNG decodes a PNG a chart was written as.
func DecodePNG(b []byte) (image.Image, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("chart PNG: %w", err)
	}
	return img, nil
}

// ColourAt is the colour of img's pixel at pt.
func ColourAt(img image.Image, pt image.Point) color.NRGBA {
	return color.NRGBAModel.Convert(img.At(pt.X, pt.Y)).(color.NRGBA)
}

// Over is the opaque colour a translucent fill gives over bg: what a
// band's fill looks like in the image.
func Over(fill, bg color.Color) color.NRGBA {
	f := color.NRGBAModel.Convert(fill).(color.NRGBA)
	g := color.NRGBAModel.Convert(bg).(color.NRGBA)
	a := float64(f.A) / 255
	mix := func(x, y uint8) uint8 { return uint8(math.Round(a*float64(x) + (1-a)*float64(y))) }
	return color.NRGBA{R: mix(f.R, g.R), G: mix(f.G, g.G), B: mix(f.B, g.B), A: 0xff}
}

// Near reports whether two colours differ by at most tol in each of red,
// green and blue (0–255): the rounding of compositing and encoding.
func Near(a, b color.Color, tol int) bool {
	x := color.NRGBAModel.Convert(a).(color.NRGBA)
	y := color.NRGBAModel.Convert(b).(color.NRGBA)
	d := func(u, v uint8) bool { return max(int(u)-int(v), int(v)-int(u)) <= tol }
	return d(x.R, y.R) && d(x.G, y.G) && d(x.B, y.B)
}

// Share is the fraction of the pixels of the vertical segment from a to
// b (a's column, both ends included) whose colour is near want (see
// Near, tolerance 3): how much of a band's span shows its fill.
func Share(img image.Image, a, b image.Point, want color.Color) float64 {
	top, bottom := min(a.Y, b.Y), max(a.Y, b.Y)
	n := 0
	for y := top; y <= bottom; y++ {
		if Near(ColourAt(img, image.Point{X: a.X, Y: y}), want, 3) {
			n++
		}
	}
	return float64(n) / float64(bottom-top+1)
}

// CheckColour reports an error unless the pixel where (x, y) is drawn
// has a colour near want (tolerance 8): a marker drawn at its value.
func (l *Layout) CheckColour(img image.Image, x, y float64, want color.Color) error {
	pt := l.Pixel(x, y)
	if got := ColourAt(img, pt); !Near(got, want, 8) {
		w := color.NRGBAModel.Convert(want).(color.NRGBA)
		return fmt.Errorf("(%g, %g) at pixel %v is #%02x%02x%02x, want #%02x%02x%02x", x, y, pt, got.R, got.G, got.B, w.R, w.G, w.B)
	}
	return nil
}

// bandInset keeps a band's edge lines out of the pixels CheckBand reads
// as its inside; bandOutside is how far beyond the edges it looks for
// fill that should not be there.
const (
	bandInset   = 2 // pixels
	bandOutside = 6 // pixels
)

// CheckBand reports an error unless the band from lo to hi, filled with
// fill over the background bg, is drawn at data x where its values are:
// its fill over most of the column between its edges (on a band too
// thin for an inside, the edges', nothing of the background), and none
// in the few pixels just beyond them.
func (l *Layout) CheckBand(img image.Image, x, lo, hi float64, fill, bg color.Color) error {
	seen := Over(fill, bg)
	top, bottom := l.Pixel(x, hi), l.Pixel(x, lo)
	if bottom.Y-top.Y < 2*bandInset+3 {
		// The rows strictly inside, else the middle one: the edge rows
		// are partly the background's.
		a, b := image.Point{X: top.X, Y: top.Y + 1}, image.Point{X: top.X, Y: bottom.Y - 1}
		if b.Y < a.Y {
			a.Y = (top.Y + bottom.Y) / 2
			b.Y = a.Y
		}
		if s := Share(img, a, b, bg); s > 0 {
			return fmt.Errorf("band %g–%g at x %g: %.0f%% of pixels %d–%d are background", lo, hi, x, 100*s, top.Y, bottom.Y)
		}
	} else if in := Share(img, image.Point{X: top.X, Y: top.Y + bandInset}, image.Point{X: top.X, Y: bottom.Y - bandInset}, seen); in < 0.6 {
		return fmt.Errorf("band %g–%g at x %g: %.0f%% of pixels %d–%d show its fill", lo, hi, x, 100*in, top.Y, bottom.Y)
	}
	above := Share(img, image.Point{X: top.X, Y: top.Y - bandOutside}, image.Point{X: top.X, Y: top.Y - bandInset}, seen)
	below := Share(img, image.Point{X: top.X, Y: bottom.Y + bandInset}, image.Point{X: top.X, Y: bottom.Y + bandOutside}, seen)
	if above > 0 || below > 0 {
		return fmt.Errorf("band %g–%g at x %g: its fill shows beyond its edges (%.0f%% above, %.0f%% below)", lo, hi, x, 100*above, 100*below)
	}
	return nil
}

// CheckEmpty reports an error if a band's fill over the background bg
// shows anywhere in the column at data x from y0 to y1: a band that must
// not reach there.
func (l *Layout) CheckEmpty(img image.Image, x, y0, y1 float64, fill, bg color.Color) error {
	if s := Share(img, l.Pixel(x, y0), l.Pixel(x, y1), Over(fill, bg)); s > 0 {
		return fmt.Errorf("x %g, %g–%g: %.0f%% of pixels show a fill that should not be there", x, y0, y1, 100*s)
	}
	return nil
}
