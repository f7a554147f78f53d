package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The interval covers the true quantile of an exponential distribution
// close to the nominal 95% over many samples: counted over 1000 samples
// of 2000 values, with a binomial margin (±3 SE of 0.95 over 1000 ≈ ±2%).
func TestQuantileCICoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, p := range []float64{0.95, 0.99} {
		truth := -math.Log(1 - p)
		cover := 0
		const reps = 1000
		xs := make([]float64, 2000)
		for range reps {
			for i := range xs {
				xs[i] = rng.ExpFloat64()
			}
			slices.Sort(xs)
			lo, hi, ok := QuantileCI(xs, p, 0.95)
			if !ok {
				t.Fatalf("p=%v: no interval from %d samples", p, len(xs))
			}
			if lo > hi {
				t.Fatalf("p=%v: interval [%v, %v] reversed", p, lo, hi)
			}
			if lo <= truth && truth <= hi {
				cover++
			}
		}
		if rate := float64(cover) / reps; rate < 0.93 || rate > 0.98 {
			t.Errorf("p=%v: coverage %.3f, want 0.95 ± 0.02", p, rate)
		}
	}
}

func TestQuantileCITooFew(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if _, _, ok := QuantileCI(xs, 0.99, 0.95); ok {
		t.Error("p99 of 10 samples: want no interval")
	}
	if _, _, ok := QuantileCI(nil, 0.5, 0.95); ok {
		t.Error("empty sample: want no interval")
	}
	// The median of 100: ranks 50 ∓ 9.8 → 40 and 61 (1-based).
	ys := make([]float64, 100)
	for i := range ys {
		ys[i] = float64(i + 1)
	}
	lo, hi, ok := QuantileCI(ys, 0.5, 0.95)
	if !ok || lo != 40 || hi != 61 {
		t.Errorf("median of 1..100: [%v, %v] ok=%v, want [40, 61]", lo, hi, ok)
	}
}

func TestRunLevelLog(t *testing.T) {
	e := math.Exp
	nan := math.NaN()
	base := []RunValue{{e(-0.05), nan}, {1, nan}, {e(0.05), nan}}
	for _, tc := range []struct {
		name     string
		base     []RunValue
		cand     []RunValue
		se, df   float64
		ratio    float64
		wantKind string
	}{
		// Nothing known of sampling error: the candidate varies like a
		// baseline run, s² = 0.0025, SE² = s²/3 + s², df = 2.
		{"values only", base, []RunValue{{1.3, nan}}, math.Sqrt(0.0025/3 + 0.0025), 2, 1.3, "between-run"},
		// The candidate's own sampling variance 0.01 exceeds s²: with the
		// baseline's unknown, the candidate's stands in for v̄, τ̂² = 0,
		// and the candidate term 0.01 is known exactly.
		{"candidate noisier", base, []RunValue{{1.3, 0.01}}, math.Sqrt(0.0025/3 + 0.01),
			(0.0025/3 + 0.01) * (0.0025/3 + 0.01) * 2 / ((0.0025 / 3) * (0.0025 / 3)), 1.3, "sampling error"},
		// Sampling variances known everywhere: v̄ = (3·0.0016 + 0.0036)/4
		// = 0.0021, τ̂² = 0.0004. A baseline run (0.0004 + 0.0016 < s²)
		// varies like a typical run, s²; the candidate by 0.0004 + 0.0036,
		// of which 0.0004 is estimated.
		{"both known", []RunValue{{e(-0.05), 0.0016}, {1, 0.0016}, {e(0.05), 0.0016}}, []RunValue{{1.3, 0.0036}},
			math.Sqrt(0.0025/3 + 0.004), (0.0025/3 + 0.004) * (0.0025/3 + 0.004) * 2 / ((0.0025/3 + 0.0004) * (0.0025/3 + 0.0004)), 1.3, "sampling error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := RunLevelLog(tc.base, tc.cand, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.SE-tc.se) > 1e-9 || math.Abs(r.DF-tc.df) > 1e-6*tc.df || math.Abs(r.Ratio-tc.ratio) > 1e-9 {
				t.Errorf("se %v df %v ratio %v, want %v %v %v", r.SE, r.DF, r.Ratio, tc.se, tc.df, tc.ratio)
			}
			tq := TQuantile(0.975, tc.df)
			if want := tc.ratio * e(-tq*tc.se); math.Abs(r.Low-want) > 1e-9 {
				t.Errorf("low %v, want %v", r.Low, want)
			}
			if !strings.Contains(r.Method, tc.wantKind) {
				t.Errorf("method %q lacks %q", r.Method, tc.wantKind)
			}
		})
	}
	if _, err := RunLevelLog(base[:1], base, 0.95); err == nil {
		t.Error("one baseline run: want an error")
	}
	if _, err := RunLevelLog(base, []RunValue{{0, nan}}, 0.95); err == nil {
		t.Error("zero candidate value: want an error")
	}
}

// Two candidate runs: the between-run variance is pooled over both
// groups (df = 5 + 2 − 2), as a pooled t on logs does.
func TestRunLevelLogPooled(t *testing.T) {
	nan := math.NaN()
	bx := []float64{100, 101, 99, 100.5, 99.5}
	cx := []float64{110, 118}
	var base, cand []RunValue
	var lb, lc []float64
	for _, x := range bx {
		base = append(base, RunValue{x, nan})
		lb = append(lb, math.Log(x))
	}
	for _, x := range cx {
		cand = append(cand, RunValue{x, nan})
		lc = append(lc, math.Log(x))
	}
	r, err := RunLevelLog(base, cand, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	_, vb := MeanVar(lb)
	_, vc := MeanVar(lc)
	s2 := (4*vb + vc) / 5
	if se := math.Sqrt(s2 * (1.0/5 + 1.0/2)); math.Abs(r.SE-se) > 1e-12 || math.Abs(r.DF-5) > 1e-9 {
		t.Errorf("se %v df %v, want %v 5", r.SE, r.DF, se)
	}
}
