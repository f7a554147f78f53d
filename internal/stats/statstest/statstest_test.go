package statstest

import (
	"math"
	"testing"
)

// Each floor sits below its measurement, by more for fewer seeds.
func TestBinomialFloor(t *testing.T) {
	for _, tc := range []struct {
		n    int
		p    float64
		want float64
	}{{20, 1, 1}, {20, 0, 0}, {20, 0.9, 0.7}, {20, 0.96, 0.8}, {50, 0.9, 0.78}, {20, 0.5, 0.2}} {
		if got := BinomialFloor(tc.n, tc.p, GuardRisk); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("BinomialFloor(%d, %g) = %g, want %g", tc.n, tc.p, got, tc.want)
		}
	}
}
