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

// A ceiling sits above its measurement, and a rate never seen to fail
// (or, for a ceiling, to occur) still leaves its guard slack.
func TestBinomialCeilingAndMeasuredRate(t *testing.T) {
	for _, tc := range []struct {
		n    int
		p    float64
		want float64
	}{{20, 0.006, 0.1}, {20, 0.045, 0.2}, {20, 0, 0}, {20, 1, 1}} {
		if got := BinomialCeiling(tc.n, tc.p, GuardRisk); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("BinomialCeiling(%d, %g) = %g, want %g", tc.n, tc.p, got, tc.want)
		}
	}
	if got := MeasuredRate(50, 50, false); math.Abs(got-0.9418) > 1e-4 {
		t.Errorf("MeasuredRate(50, 50) = %.4f, want 0.05^(1/50) = 0.9418", got)
	}
	if got := BinomialFloor(20, MeasuredRate(50, 50, false), GuardRisk); got >= 1 {
		t.Errorf("a floor from 50 of 50 over 20 seeds is %g: no slack", got)
	}
	if got, want := MeasuredRate(3, 500, true), 0.006; math.Abs(got-want) > 1e-12 {
		t.Errorf("MeasuredRate(3, 500, ceiling) = %g, want %g", got, want)
	}
	if got := MeasuredRate(0, 50, true); math.Abs(got-0.0582) > 1e-4 {
		t.Errorf("MeasuredRate(0, 50, ceiling) = %.4f, want 1 − 0.05^(1/50) = 0.0582", got)
	}
}
