package stats

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestSpread(t *testing.T) {
	// Values checked by hand: mean 5, squared deviations sum to 32 over
	// n-1 = 7, so s = √(32/7).
	xs := []float64{2, 4, 4, 4, 5, 5, 7, 9}
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"mean", Mean(xs), 5},
		{"stddev n-1", StdDev(xs), math.Sqrt(32.0 / 7)},
		{"cv", CV(xs), math.Sqrt(32.0/7) / 5},
		{"stddev single", StdDev([]float64{3}), 0},
	}
	for _, tt := range tests {
		if !near(tt.got, tt.want, 1e-12) {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if !math.IsNaN(Mean(nil)) || !math.IsNaN(StdDev(nil)) {
		t.Error("empty input must give NaN")
	}
	if !math.IsNaN(CV([]float64{0, 0})) {
		t.Error("CV of zero mean must be NaN")
	}
}

func TestTQuantile(t *testing.T) {
	// Table values of t(0.975, df) quoted by Georges et al. for n = 3, 5,
	// 10, 30, and two one-sided points from standard tables.
	tests := []struct {
		p, df, want float64
	}{
		{0.975, 2, 4.302653},
		{0.975, 4, 2.776445},
		{0.975, 9, 2.262157},
		{0.975, 29, 2.045230},
		{0.975, 1000, 1.962339},
		{0.8, 10, 0.879058},
		{0.95, 1, 6.313752},
		{0.995, 10, 3.169273},
		{0.975, 1e6, 1.959966},
		{0.025, 4, -2.776445},
		{0.5, 3, 0},
	}
	for _, tt := range tests {
		if got := TQuantile(tt.p, tt.df); !near(got, tt.want, 2e-6) {
			t.Errorf("TQuantile(%v, %v) = %v, want %v", tt.p, tt.df, got, tt.want)
		}
	}
	for _, bad := range [][2]float64{{-0.1, 3}, {1.1, 3}, {0.9, 0}, {math.NaN(), 3}} {
		if got := TQuantile(bad[0], bad[1]); !math.IsNaN(got) {
			t.Errorf("TQuantile(%v, %v) = %v, want NaN", bad[0], bad[1], got)
		}
	}
}

func TestTCDF(t *testing.T) {
	// df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/π.
	for _, x := range []float64{-3, -0.5, 0, 0.7, 12} {
		want := 0.5 + math.Atan(x)/math.Pi
		if got := TCDF(x, 1); !near(got, want, 1e-12) {
			t.Errorf("TCDF(%v, 1) = %v, want %v", x, got, want)
		}
	}
}

func TestMeanCI(t *testing.T) {
	xs := []float64{10, 12, 11, 13, 9}
	lo, hi := MeanCI(xs, 0.95)
	h := 2.776445 * StdDev(xs) / math.Sqrt(5)
	if !near(lo, 11-h, 1e-5) || !near(hi, 11+h, 1e-5) {
		t.Errorf("MeanCI = [%v, %v], want 11 ± %v", lo, hi, h)
	}
	if lo, hi := MeanCI([]float64{7}, 0.95); lo != 7 || hi != 7 {
		t.Errorf("single run CI = [%v, %v], want [7, 7]", lo, hi)
	}
}

func TestMDC(t *testing.T) {
	// The reference figures: CoV 3% → 5.3% at n = 5, 3.8% at n = 10;
	// CoV 5% → 8.9% at n = 5 (alpha 0.05, power 0.8).
	tests := []struct {
		n        int
		cv, want float64
	}{
		{5, 0.03, 0.053},
		{10, 0.03, 0.038},
		{5, 0.05, 0.089},
		{10, 0.02, 0.025},
	}
	for _, tt := range tests {
		if got := MDC(tt.n, tt.cv, 0.05, 0.8); !near(got, tt.want, 0.0006) {
			t.Errorf("MDC(%d, %v) = %.4f, want %.3f", tt.n, tt.cv, got, tt.want)
		}
	}
	if !math.IsNaN(MDC(1, 0.03, 0.05, 0.8)) {
		t.Error("MDC with one run must be NaN")
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{3, 1, 2}, 0.95)
	if s.N != 3 || s.Min != 1 || s.Max != 3 || s.Mean != 2 || s.StdDev != 1 || s.CV != 0.5 {
		t.Errorf("Summarize = %+v", s)
	}
	if !(s.CILow < 1 && s.CIHigh > 3) { // t(0.975,2)=4.30 · 1/√3 ≈ 2.48
		t.Errorf("CI [%v, %v] should be wider than the data", s.CILow, s.CIHigh)
	}
}
