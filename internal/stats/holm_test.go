package stats

import (
	"math"
	"testing"
)

func TestHolm(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		in   []float64
		want []float64
	}{
		// Sorted: .005×4=.02, .01×3=.03, .03×2=.06, .04×1=.04 -> monotone .06.
		{"step-down", []float64{0.01, 0.04, 0.03, 0.005}, []float64{0.03, 0.06, 0.06, 0.02}},
		{"capped at 1", []float64{0.6, 0.7}, []float64{1, 1}},
		{"NaN skipped", []float64{0.01, nan, 0.02}, []float64{0.02, nan, 0.02}},
		{"empty", nil, []float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Holm(tc.in)
			if len(got) != len(tc.want) {
				t.Fatalf("len %d, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if math.IsNaN(tc.want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(got[i]) && math.Abs(got[i]-tc.want[i]) > 1e-12) {
					t.Errorf("[%d] = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestWeightedHolm(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		p, w []float64
		want []float64
	}{
		// Equal weights are Holm's method.
		{"equal", []float64{0.01, 0.04, 0.03, 0.005}, []float64{1, 1, 1, 1}, []float64{0.03, 0.06, 0.06, 0.02}},
		// p/w: .01/.5=.02 (×1), .02/.25=.08 (×.5 = .04), .03/.25=.12 (×.25 = .03 -> .04).
		{"weighted", []float64{0.01, 0.02, 0.03}, []float64{0.5, 0.25, 0.25}, []float64{0.02, 0.04, 0.04}},
		// The NaN's weight is shared: .01/.5 (of 1) = .02, .04/.5 × .5 = .04.
		{"NaN skipped", []float64{0.01, nan, 0.04}, []float64{0.5, 0.25, 0.5}, []float64{0.02, nan, 0.04}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := WeightedHolm(tc.p, tc.w)
			for i := range got {
				if math.IsNaN(tc.want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(got[i]) && math.Abs(got[i]-tc.want[i]) > 1e-12) {
					t.Errorf("[%d] = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestFixedSequence(t *testing.T) {
	nan := math.NaN()
	got := FixedSequence([]float64{0.02, nan, 0.01, 0.04, 0.03})
	want := []float64{0.02, nan, 0.02, 0.04, 0.04}
	for i := range got {
		if math.IsNaN(want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(got[i]) && got[i] != want[i]) {
			t.Errorf("[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}
