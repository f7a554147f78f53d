package stats

import (
	"math"
	"testing"
)

func TestBootstrapLog(t *testing.T) {
	base := []float64{100, 103, 97, 101, 99, 102}
	cand := []float64{111, 114, 108, 112}
	r, err := BootstrapLog(base, cand, 0.95, 4000, 7)
	if err != nil {
		t.Fatal(err)
	}
	gm := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += math.Log(x)
		}
		return math.Exp(s / float64(len(xs)))
	}
	if want := gm(cand) / gm(base); math.Abs(r.Ratio-want) > 1e-12 {
		t.Errorf("ratio %v, want ratio of geometric means %v", r.Ratio, want)
	}
	if !(r.Low < r.Ratio && r.Ratio < r.High) || r.Low < 1.05 || r.High > 1.18 {
		t.Errorf("interval [%v, %v] implausible for an ~11%% rise", r.Low, r.High)
	}
	// Same seed, same answer: reports must be reproducible.
	r2, _ := BootstrapLog(base, cand, 0.95, 4000, 7)
	if r2 != r {
		t.Errorf("same seed gave %+v then %+v", r, r2)
	}
	if _, err := BootstrapLog([]float64{1}, cand, 0.95, 10, 1); err == nil {
		t.Error("one baseline run accepted")
	}
	if _, err := BootstrapLog(base, []float64{-1}, 0.95, 10, 1); err == nil {
		t.Error("negative candidate accepted")
	}
}
