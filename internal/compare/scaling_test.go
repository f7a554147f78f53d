package compare

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
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

func TestScalingBadInput(t *testing.T) {
	r := figures.Run{Source: "x.json", RPS: 5}
	if _, err := PointFromRun(r, 0); err == nil || !strings.Contains(err.Error(), "--levels") {
		t.Errorf("run without VUs: %v", err)
	}
	if _, err := Scale([]ScalingPoint{{Level: 1, Throughput: 1}, {Level: 2, Throughput: 2}}, "", 0); err == nil {
		t.Error("two points accepted")
	}
}
