package report

import (
	"image"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/rules"
)

var (
	fixtureOnce sync.Once
	fixtureEnv  *envelope.Envelope
	fixtureErr  error
)

// fixtureEnvelope is the envelope of the three six-minute baseline runs
// in the shared testdata, read from their point streams (so each run
// has its own intervals), computed once for all the chart tests.
func fixtureEnvelope(t *testing.T) *envelope.Envelope {
	t.Helper()
	files := fixtures.Baselines(t)
	fixtureOnce.Do(func() {
		runs, err := figures.ReadFiles(files, figures.LoadOptions(0, ""))
		if err != nil {
			fixtureErr = err
			return
		}
		fixtureEnv, fixtureErr = envelope.Compute(runs, envelope.Options{Name: "baseline-mix"})
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureEnv
}

// chartEnvelopes are the envelopes the chart tests draw: the real
// baseline runs, the demo's five, and one run alone (no interval of the
// mean).
func chartEnvelopes(t *testing.T) map[string]*envelope.Envelope {
	d, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	in, err := demo.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	one, err := envelope.Compute(in[:1], envelope.Options{Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*envelope.Envelope{"baseline-mix fixture": fixtureEnvelope(t), "demo": d, "one demo run": one}
}

// expectedRanges are the values each chart's ranges must be drawn at,
// read from the envelope itself (not from the chart), by range name: a
// value the chart takes from the wrong field is found as surely as one
// drawn at the wrong pixel.
func expectedRanges(env *envelope.Envelope, name string) map[string][]float64 {
	per := func(f func(envelope.Run) float64) []float64 {
		var v []float64
		for _, r := range env.Runs {
			v = append(v, f(r))
		}
		return v
	}
	switch name {
	case ChartThroughput:
		return map[string][]float64{"run rate": append(per(func(r envelope.Run) float64 { return r.RPS }), math.NaN())}
	case ChartIterations:
		return map[string][]float64{"run rate": per(func(r envelope.Run) float64 { return r.IterationsPerS })}
	case ChartLatency:
		return map[string][]float64{
			"p50": per(func(r envelope.Run) float64 { return r.Median }),
			"p95": per(func(r envelope.Run) float64 { return r.P95 }),
			"p99": per(func(r envelope.Run) float64 { return r.P99 }),
		}
	}
	return nil
}

// expectedBands are the bands each chart must draw, in order, read from
// the envelope and the rules' calibration: low and high (equal for a
// line).
func expectedBands(env *envelope.Envelope, cal *rules.Calibration, name string) [][2]float64 {
	l := env.Latency
	switch name {
	case ChartThroughput:
		return [][2]float64{{env.Throughput.Min, env.Throughput.Max}, {cal.Throughput.Floor, cal.Throughput.Floor}}
	case ChartIterations:
		return [][2]float64{{env.Iterations.Min, env.Iterations.Max}}
	case ChartLatency:
		return [][2]float64{{l.Median.Min, l.Median.Max}, {l.P95.Min, l.P95.Max}, {l.P99.Min, l.P99.Max}}
	}
	return nil
}

// Every chart of the envelope report, on the real baseline runs and the
// demo's, in both themes: each run's marker is at its value's pixel in
// its series' colour, each band's fill lies between its edges and not
// beyond them, the throughput chart's mean and alert floor are where
// their values are, and the legend and title overlap nothing and stay
// inside the image.
func TestEnvelopeChartsDrawValuesInPlace(t *testing.T) {
	for envName, env := range chartEnvelopes(t) {
		cal, err := rules.Calibrate(env)
		if err != nil {
			t.Fatalf("%s: %v", envName, err)
		}
		for _, nc := range envChartList(env) {
			c := nc.c
			want := expectedRanges(env, nc.name)
			for _, th := range chart.Themes() {
				where := envName + " " + nc.name + " " + th.Name
				img, l, err := c.Draw(th)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if err := l.Check(); err != nil {
					t.Errorf("%s: %v", where, err)
				}
				if len(l.Legend) != len(c.Ranges)+len(c.Bands) {
					t.Errorf("%s: %d legend entries for %d ranges and %d bands", where, len(l.Legend), len(c.Ranges), len(c.Bands))
				}
				for i, r := range c.Ranges {
					vals, ok := want[r.Name]
					if !ok {
						vals = r.Values // the endpoint chart and the mean: their values are the bands'
					}
					for j, v := range vals {
						if math.IsNaN(v) {
							continue
						}
						if err := l.CheckColour(img, c.RangeX(i, j), v, c.RangeColour(th, i)); err != nil {
							t.Errorf("%s: %s of %s: %v", where, r.Name, c.Categories[j], err)
						}
					}
					delete(want, r.Name)
				}
				if len(want) > 0 {
					t.Errorf("%s: no series for %v", where, want)
				}
				if nc.name == ChartEndpoints {
					endpointWhiskers(t, where, env, c, img, l, th)
				}
				bands := expectedBands(env, cal, nc.name)
				if len(bands) != len(c.Bands) {
					t.Errorf("%s: %d bands, want %d", where, len(c.Bands), len(bands))
					bands = nil
				}
				for i, want := range bands {
					b := c.Bands[i]
					x := float64(b.From) - 0.4 // left of the first category's markers
					if want[0] == want[1] {
						if err := l.CheckColour(img, x, want[0], th.Palette[b.Hue-1]); err != nil {
							t.Errorf("%s: line %s: %v", where, b.Name, err)
						}
						continue
					}
					if err := l.CheckBand(img, x, want[0], want[1], c.BandFill(th, i), th.Background); err != nil {
						t.Errorf("%s: %s: %v", where, b.Name, err)
					}
				}
				want = expectedRanges(env, nc.name)
			}
			switch nc.name {
			case ChartThroughput:
				throughputChartSays(t, envName, env, c)
			case ChartIterations:
				if !c.ZeroY || !strings.Contains(c.Title, "CV "+envPct(env.Iterations.CV, 2)) {
					t.Errorf("%s: iteration chart %q, ZeroY %v: want the CV stated and the axis from zero", envName, c.Title, c.ZeroY)
				}
			case ChartLatency:
				if !c.LogY || len(c.Ranges) != 3 || len(c.Bands) != 3 {
					t.Errorf("%s: latency chart log %v, %d series, %d bands: want p50, p95, p99 and their bands on a log axis", envName, c.LogY, len(c.Ranges), len(c.Bands))
				}
			}
		}
	}
}

// throughputChartSays checks what the throughput chart states beyond
// its runs (whose pixels, and the floor's, the caller checks): the CV
// in its title, the mean with its interval in the last column.
func throughputChartSays(t *testing.T, name string, env *envelope.Envelope, c chart.Chart) {
	t.Helper()
	tp := env.Throughput
	if !strings.Contains(c.Title, "CV "+envPct(tp.CV, 2)) {
		t.Errorf("%s: throughput title %q does not state the CV %s", name, c.Title, envPct(tp.CV, 2))
	}
	if tp.N < 2 {
		if len(c.Categories) != len(env.Runs) || len(c.Ranges) != 1 {
			t.Errorf("%s: one run: %d columns and %d series, want the run alone", name, len(c.Categories), len(c.Ranges))
		}
		return
	}
	last := len(c.Categories) - 1
	m := c.Ranges[len(c.Ranges)-1]
	if c.Categories[last] != meanCategory || m.Values[last] != tp.Mean || m.Low[last] != tp.CILow || m.High[last] != tp.CIHigh {
		t.Errorf("%s: last column %q %v [%v, %v], want the mean %v [%v, %v]", name, c.Categories[last], m.Values[last], m.Low[last], m.High[last], tp.Mean, tp.CILow, tp.CIHigh)
	}
	// The whisker reaches the interval's ends.
	for _, th := range chart.Themes() {
		img, l, err := c.Draw(th)
		if err != nil {
			t.Fatal(err)
		}
		for _, y := range []float64{tp.CILow, tp.CIHigh} {
			inside := y + 0.1*(tp.Mean-y) // a little inside the end
			if err := l.CheckColour(img, c.RangeX(len(c.Ranges)-1, last), inside, c.RangeColour(th, len(c.Ranges)-1)); err != nil {
				t.Errorf("%s %s: mean's interval end %v: %v", name, th.Name, y, err)
			}
		}
	}
}

// endpointWhiskers checks that each whisker of the per-endpoint chart
// reaches its band's ends across the runs, read from the envelope: a
// pixel just inside each end is the series' colour.
func endpointWhiskers(t *testing.T, where string, env *envelope.Envelope, c chart.Chart, img image.Image, l *chart.Layout, th chart.Theme) {
	t.Helper()
	names := envEndpointNames(env)
	byLabel := map[string]figures.Name{}
	for _, f := range []figures.Name{figures.Median, figures.P95, figures.P99, figures.Max} {
		byLabel[f.Def().Label] = f
	}
	if len(c.Ranges) == 0 || len(c.Categories) != len(names) {
		t.Fatalf("%s: %d series over %d endpoints, want %d", where, len(c.Ranges), len(c.Categories), len(names))
	}
	for i, r := range c.Ranges {
		fig, ok := byLabel[r.Name]
		if !ok {
			t.Errorf("%s: series %q is no figure", where, r.Name)
			continue
		}
		for j, n := range names {
			b := env.Endpoints[n].Band(fig)
			for _, y := range []float64{b.Min * math.Pow(b.Max/b.Min, 0.05), b.Max / math.Pow(b.Max/b.Min, 0.05)} {
				if err := l.CheckColour(img, c.RangeX(i, j), y, c.RangeColour(th, i)); err != nil {
					t.Errorf("%s: %s of %s, whisker %v–%v: %v", where, r.Name, n, b.Min, b.Max, err)
				}
			}
			// And no further: a few pixels beyond each end (past the
			// cap's line) is not the series' colour.
			x := c.RangeX(i, j)
			for _, pt := range []image.Point{l.Pixel(x, b.Max).Add(image.Pt(0, -4)), l.Pixel(x, b.Min).Add(image.Pt(0, 4))} {
				if got := chart.ColourAt(img, pt); chart.Near(got, c.RangeColour(th, i), 8) {
					t.Errorf("%s: %s of %s: the whisker %v–%v reaches on to pixel %v", where, r.Name, n, b.Min, b.Max, pt)
				}
			}
		}
	}
}
