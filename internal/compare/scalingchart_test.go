package compare

import (
	"fmt"
	"slices"
	"testing"

	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// The scaling chart draws each measured run at its load level and
// throughput, the fitted USL curve through its values and the linear
// limit at its level, with the title and the legend inside the image
// and clear of each other and of the data; without a fit, the measured
// runs alone.
func TestScalingChartDrawsValuesInPlace(t *testing.T) {
	truth := stats.USL{Sigma: 0.0277, Kappa: 1.04e-4, Lambda: 89.99}
	var fitted, two []ScalingPoint
	for _, vus := range []float64{1, 5, 10, 20, 40, 60, 80, 100, 140, 180} {
		p, err := PointFromRun(figures.Run{Source: "run", RPS: truth.Throughput(vus), Workload: figures.Workload{VUs: int(vus)}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		fitted = append(fitted, p)
	}
	for i, l := range []struct{ vus, rps float64 }{{50, 56.0}, {50, 56.2}, {100, 98}} {
		p, err := PointFromRun(figures.Run{Source: fmt.Sprintf("run-%d", i), RPS: l.rps, Workload: figures.Workload{VUs: int(l.vus)}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		two = append(two, p)
	}
	for name, pts := range map[string][]ScalingPoint{"USL fit": fitted, "two levels": two} {
		s, err := Scale(pts, "VUs", 0.8)
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range chart.Themes() {
			where := name + " " + th.Name
			img, l, err := s.drawn(th)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Check(); err != nil {
				t.Errorf("%s: %v", where, err)
			}
			if l.Title.Empty() || len(l.Legend) < 2 {
				t.Errorf("%s: title %v, %d legend entries", where, l.Title, len(l.Legend))
			}
			top := 0.0
			for _, p := range pts {
				top = max(top, p.Throughput)
				if err := l.CheckColour(img, p.Level, p.Throughput, th.Palette[1]); err != nil {
					t.Errorf("%s: run at %v VUs: %v", where, p.Level, err)
				}
			}
			if s.Fit == nil {
				continue
			}
			// The curve between the measured levels, and the limit's line low
			// in the chart, below the curve and the linear line.
			for _, n := range []float64{30, 120, 160} {
				if err := l.CheckColour(img, n, s.Fit.Throughput(n), th.Palette[0]); err != nil {
					t.Errorf("%s: USL curve at %v VUs: %v", where, n, err)
				}
			}
			// The line is dashed: some of a few heights is on a dash.
			var errs []error
			for k := 1; k <= 6; k++ {
				errs = append(errs, l.CheckColour(img, s.LinearLimit, 0.02*float64(k)*top, th.Palette[3]))
			}
			if !slices.Contains(errs, nil) {
				t.Errorf("%s: linear limit at %v VUs: %v", where, s.LinearLimit, errs)
			}
		}
	}
}
