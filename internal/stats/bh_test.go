package stats

import (
	"math"
	"testing"
)

func TestBenjaminiHochberg(t *testing.T) {
	tests := []struct {
		name string
		p    []float64
		m    int
		want []float64
	}{
		// R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "BH") = 0.02 0.04 0.04 0.02
		{"four", []float64{0.01, 0.04, 0.03, 0.005}, 0, []float64{0.02, 0.04, 0.04, 0.02}},
		// Two listed of a family of ten: p.adjust(c(0.001, 0.02, rep(1, 8)), "BH")[1:2]
		{"family larger than listed", []float64{0.001, 0.02}, 10, []float64{0.01, 0.1}},
		{"NaN kept", []float64{math.NaN(), 0.5}, 0, []float64{math.NaN(), 0.5}},
		{"capped at one", []float64{0.9, 0.8}, 5, []float64{1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BenjaminiHochberg(tt.p, tt.m)
			for i := range got {
				if math.IsNaN(tt.want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(got[i]) && math.Abs(got[i]-tt.want[i]) > 1e-12) {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}
