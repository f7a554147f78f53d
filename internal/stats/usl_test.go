package stats

import (
	"math"
	"testing"
)

// codahale/usl's README example: σ = 0.0277, κ = 1.04e-4, λ = 89.99,
// max throughput 1883.76 at concurrency 96 (floored peak); the published
// parameters are rounded, so X(96) matches to 0.5%.
func TestUSLModelAnchor(t *testing.T) {
	u := USL{Sigma: 0.0277, Kappa: 1.04e-4, Lambda: 89.99}
	if p := math.Floor(u.Peak()); p != 96 {
		t.Errorf("floored peak %v, want 96", p)
	}
	if x := u.Throughput(96); math.Abs(x-1883.76)/1883.76 > 5e-3 {
		t.Errorf("X(96) = %v, want ~1883.76", x)
	}
	// Efficiency at LinearLimit(0.8) must be exactly 0.8.
	n := u.LinearLimit(0.8)
	if eff := u.Throughput(n) / (u.Lambda * n); math.Abs(eff-0.8) > 1e-9 {
		t.Errorf("efficiency at LinearLimit = %v", eff)
	}
}

func TestFitUSL(t *testing.T) {
	levels := []float64{1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256}
	for _, tc := range []struct {
		name  string
		truth USL
		noise float64 // alternating relative noise
		tol   float64 // relative tolerance on σ and λ
	}{
		{"codahale exact", USL{Sigma: 0.0277, Kappa: 1.04e-4, Lambda: 89.99}, 0, 1e-4},
		{"codahale 1% noise", USL{Sigma: 0.0277, Kappa: 1.04e-4, Lambda: 89.99}, 0.01, 0.15},
		{"amdahl", USL{Sigma: 0.05, Kappa: 0, Lambda: 10}, 0, 1e-4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := make([]float64, len(levels))
			for i, n := range levels {
				sign := 1.0
				if i%2 == 1 {
					sign = -1
				}
				x[i] = tc.truth.Throughput(n) * (1 + sign*tc.noise)
			}
			u, err := FitUSL(levels, x)
			if err != nil {
				t.Fatal(err)
			}
			rel := func(got, want float64) float64 { return math.Abs(got-want) / want }
			if rel(u.Sigma, tc.truth.Sigma) > tc.tol || rel(u.Lambda, tc.truth.Lambda) > tc.tol {
				t.Errorf("fit σ=%v λ=%v, want σ=%v λ=%v", u.Sigma, u.Lambda, tc.truth.Sigma, tc.truth.Lambda)
			}
			if tc.truth.Kappa == 0 {
				if u.Kappa > 1e-7 {
					t.Errorf("κ = %v, want ~0", u.Kappa)
				}
			} else if rel(u.Kappa, tc.truth.Kappa) > 3*tc.tol {
				t.Errorf("κ = %v, want %v", u.Kappa, tc.truth.Kappa)
			}
			if u.R2 < 0.99 {
				t.Errorf("R² = %v", u.R2)
			}
			if u.Points != len(levels) || u.Levels != len(levels) || u.DegreesOfFreedom() != len(levels)-USLParams {
				t.Errorf("points %d, levels %d, degrees of freedom %d; want %d, %d, %d", u.Points, u.Levels, u.DegreesOfFreedom(), len(levels), len(levels), len(levels)-USLParams)
			}
		})
	}
}

func TestFitUSLErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		n, x []float64
	}{
		{"too few", []float64{1, 2}, []float64{1, 2}},
		{"mismatch", []float64{1, 2, 3}, []float64{1, 2}},
		{"one level", []float64{4, 4, 4}, []float64{1, 2, 3}},
		{"two levels", []float64{50, 50, 50, 50, 50, 100}, []float64{56, 56.1, 56.2, 55.97, 56.28, 98}},
		{"zero throughput", []float64{1, 2, 3}, []float64{1, 0, 3}},
		{"negative level", []float64{1, -2, 3}, []float64{1, 2, 3}},
	} {
		if _, err := FitUSL(tc.n, tc.x); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// BenchmarkFitUSL: eleven levels with 1% noise, all six seeds.
func BenchmarkFitUSL(b *testing.B) {
	truth := USL{Sigma: 0.0277, Kappa: 1.04e-4, Lambda: 89.99}
	levels := []float64{1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256}
	x := make([]float64, len(levels))
	for i, n := range levels {
		x[i] = truth.Throughput(n) * (1 + 0.01*float64(1-2*(i%2)))
	}
	for b.Loop() {
		if _, err := FitUSL(levels, x); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBootstrapLog: 5 baseline and 3 candidate runs, 10,000 resamples.
func BenchmarkBootstrapLog(b *testing.B) {
	base := []float64{357.7, 380, 405.3, 370, 390}
	cand := []float64{470, 480, 460}
	for b.Loop() {
		if _, err := BootstrapLog(base, cand, 0.95, 10000, 1); err != nil {
			b.Fatal(err)
		}
	}
}
