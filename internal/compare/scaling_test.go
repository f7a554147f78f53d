package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

func TestScaling(t *testing.T) {
	truth := stats.USL{Sigma: 0.0277, Kappa: 1.04e-4, Lambda: 89.99}
	var pts []ScalingPoint
	for _, vus := range []float64{1, 5, 10, 20, 40, 60, 80, 100, 140, 180} {
		r := figures.Run{Source: "run", RPS: truth.Throughput(vus), Workload: figures.Workload{VUs: int(vus)}}
		p, err := PointFromRun(r, 0)
		if err != nil {
			t.Fatal(err)
		}
		pts = append(pts, p)
	}
	s, err := Scale(pts, "VUs", 0.8)
	if err != nil {
		t.Fatal(err)
	}
	if math.Floor(s.Peak) != 96 {
		t.Errorf("peak %v, want 96", s.Peak)
	}
	limit := math.Floor(truth.LinearLimit(0.8))
	want := "Throughput stopped scaling linearly beyond " + strconv.Itoa(int(limit)) + " VUs"
	if !strings.Contains(strings.Join(s.Sentences, " "), want) {
		t.Errorf("sentences %q, want %q", s.Sentences, want)
	}
	dir := filepath.Join(t.TempDir(), "charts")
	paths, err := s.WriteChart(dir, "scaling")
	if err != nil {
		t.Fatal(err)
	}
	if paths.Light != "charts/light/scaling.png" || paths.Dark != "charts/dark/scaling.png" {
		t.Errorf("paths %+v", paths)
	}
	for _, th := range []string{"light", "dark"} {
		b, err := os.ReadFile(filepath.Join(dir, th, "scaling.png"))
		if err != nil || len(b) < 1000 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s chart: %v, %d bytes", th, err, len(b))
		}
	}
	// Every tick label of the chart reads as its tick's value.
	for _, th := range chart.Themes() {
		p, err := s.plot(th)
		if err != nil {
			t.Fatal(err)
		}
		if err := chart.CheckTicks(p); err != nil {
			t.Error(err)
		}
	}
	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"peak": 96.`) {
		t.Errorf("json %v %s", err, js.String())
	}
}

// TestScalingLevels: what runs at 1, 2, 3 and 4 or more distinct load
// levels may be told. The runs are six-minute summaries of the compare
// tests: the envelope's five 50-VU runs and a 100-VU step, and runs at
// further levels. Two levels identify no USL (only the linear part is
// given), three fit it exactly (no R², no limit beyond the levels), four
// or more leave it degrees of freedom.
func TestScalingLevels(t *testing.T) {
	at50 := []float64{56.0, 56.1, 56.2, 55.97, 56.28} // testEnvelope's runs
	run := func(name string, vus, rps float64) ScalingPoint {
		p, err := PointFromRun(testRun(name, runSpec{vus: vus, rps: rps, p95: 380, p99: 930, total: 20000}), 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var five []ScalingPoint
	for i, rps := range at50 {
		five = append(five, run(fmt.Sprintf("run-%d", i+1), 50, rps))
	}
	step100 := run("step-100", 100, 98)
	step25 := run("step-25", 25, 28.4)
	step75 := run("step-75", 75, 80.1)
	step150 := run("step-150", 150, 121)
	with := func(extra ...ScalingPoint) []ScalingPoint {
		return append(append([]ScalingPoint(nil), five...), extra...)
	}
	for _, tc := range []struct {
		name   string
		points []ScalingPoint
		err    []string // in the error, when it must fail
		levels int
		fit    bool // a USL is fitted
		r2     bool // R² is given (the fit has degrees of freedom)
		want   []string
		never  []string
	}{
		{name: "1 level", points: five,
			err: []string{"one concurrency level (50 VUs)", "scaling cannot be judged", "run the test at 3 more levels, e.g. 25, 75 and 100 VUs"}},
		{name: "2 levels", points: with(step100), levels: 2,
			want: []string{"6 runs at 2 load levels (50 and 100 VUs)", "not identified by two levels, so no USL is fitted",
				"1.122 req/s per VU at 50 VUs (mean of 5 runs), 0.98 req/s per VU at 100 VUs (1 run)", "each VU gave 87.3% of its throughput at 50 VUs",
				"run at least 2 more load levels, e.g. 25 and 75 VUs", "PER VU"},
			never: []string{"R²", "limit at", "peaks", "USL fit over"}},
		{name: "3 levels", points: with(step100, step25), levels: 3, fit: true,
			want:  []string{"USL fit over 7 runs at 3 load levels", "no degrees of freedom", "no R² is given", "run at least 1 more load level, e.g. 13 VUs", "FITTED"},
			never: []string{"R² =", "the model puts the limit"}},
		{name: "4 levels", points: with(step100, step25, step75), levels: 4, fit: true, r2: true,
			want:  []string{"USL fit over 8 runs at 4 load levels", "R² = 0.99", "4 load levels: the USL fit is fragile below 6"},
			never: []string{"degrees of freedom", "more load level"}},
		{name: "5 levels", points: with(step100, step25, step75, step150), levels: 5, fit: true, r2: true,
			want:  []string{"USL fit over 9 runs at 5 load levels", "R² = 0.99"},
			never: []string{"degrees of freedom", "more load level"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Scale(tc.points, "VUs", 0.8)
			if tc.err != nil {
				if err == nil {
					t.Fatal("scaling judged")
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Levels) != tc.levels || (s.Fit != nil) != tc.fit {
				t.Fatalf("%d levels, fit %v; want %d, %v", len(s.Levels), s.Fit != nil, tc.levels, tc.fit)
			}
			if s.Fit != nil && (s.Fit.DegreesOfFreedom() > 0) != tc.r2 {
				t.Errorf("degrees of freedom %d with %d levels", s.Fit.DegreesOfFreedom(), tc.levels)
			}
			if len(s.Suggested) != max(0, 4-tc.levels) {
				t.Errorf("suggested levels %v with %d levels", s.Suggested, tc.levels)
			}
			var txt, js bytes.Buffer
			if err := s.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(txt.String(), w) {
					t.Errorf("text lacks %q:\n%s", w, txt.String())
				}
			}
			for _, w := range tc.never {
				if strings.Contains(txt.String(), w) {
					t.Errorf("text says %q:\n%s", w, txt.String())
				}
			}
			if err := s.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			fit, hasFit := doc["fit"].(map[string]any)
			_, hasR2 := fit["r2"]
			if hasFit != tc.fit || hasR2 != tc.r2 {
				t.Errorf("json: fit %v, r2 %v; want %v, %v\n%s", hasFit, hasR2, tc.fit, tc.r2, js.String())
			}
			if !tc.fit && (doc["peak"] != nil || doc["linear_limit"] != nil || doc["max_throughput"] != nil) {
				t.Errorf("json without a fit gives a peak or limit:\n%s", js.String())
			}
			if lv, ok := doc["levels"].([]any); !ok || len(lv) != tc.levels {
				t.Errorf("json levels %v", doc["levels"])
			}
			dir := filepath.Join(t.TempDir(), "charts")
			if _, err := s.WriteChart(dir, "scaling"); err != nil {
				t.Fatal(err)
			}
			for _, th := range chart.Themes() {
				p, err := s.plot(th)
				if err != nil {
					t.Fatal(err)
				}
				if err := chart.CheckTicks(p); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestScalingTwoLevels: the linear part of two levels, by hand.
func TestScalingTwoLevels(t *testing.T) {
	s, err := Scale([]ScalingPoint{{Level: 40, Throughput: 40}, {Level: 10, Throughput: 12}, {Level: 10, Throughput: 8}}, "rps", 0)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := s.Levels[0], s.Levels[1]
	if lo.Level != 10 || lo.Runs != 2 || lo.Throughput != 10 || lo.PerUnit != 1 || lo.Efficiency != 1 ||
		hi.Level != 40 || hi.Runs != 1 || hi.PerUnit != 1 || hi.Efficiency != 1 {
		t.Errorf("levels %+v", s.Levels)
	}
	if !slices.Equal(s.Suggested, []float64{5, 25}) || s.Fit != nil || !math.IsNaN(s.LinearLimit) {
		t.Errorf("suggested %v, fit %v, limit %v", s.Suggested, s.Fit, s.LinearLimit)
	}
}

func TestScalingBadInput(t *testing.T) {
	r := figures.Run{Source: "x.json", RPS: 5}
	if _, err := PointFromRun(r, 0); err == nil || !strings.Contains(err.Error(), "--levels") {
		t.Errorf("run without VUs: %v", err)
	}
	if _, err := Scale([]ScalingPoint{{Level: 2, Throughput: 1}, {Level: 2, Throughput: 2}}, "", 0); err == nil {
		t.Error("one level accepted")
	}
	if _, err := Scale(nil, "", 0); err == nil {
		t.Error("no runs accepted")
	}
}
