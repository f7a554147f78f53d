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
