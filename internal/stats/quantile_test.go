package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// k6's own test of its percentile: {10,15,20} → p(90)=19, p(95)=19.5,
// p(99)=19.9; plus the edges k6 defines (empty → 0, one sample → it).
func TestQuantileK6(t *testing.T) {
	cases := []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{[]float64{10, 15, 20}, 0.90, 19},
		{[]float64{10, 15, 20}, 0.95, 19.5},
		{[]float64{10, 15, 20}, 0.99, 19.9},
		{[]float64{10, 15, 20}, 0.5, 15},
		{[]float64{10, 15, 20}, 0, 10},
		{[]float64{10, 15, 20}, 1, 20},
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{nil, 0.95, 0},
		{[]float64{}, 0.5, 0},
		{[]float64{7}, 0.95, 7},
		{[]float64{10, 15, 20}, -0.5, 10},
		{[]float64{10, 15, 20}, 1.5, 20},
	}
	for _, c := range cases {
		if got := Quantile(c.xs, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%v, %v) = %v, want %v", c.xs, c.p, got, c.want)
		}
	}
}

// The sketch's relative error stays within SketchAlpha at every quantile,
// on heavy-tailed, bimodal, negative and zero-laden data, and merging two
// sketches equals sketching everything.
func TestSketchAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func() float64{
		"lognormal":  func() float64 { return math.Exp(rng.NormFloat64()*1.5 + 3) },
		"bimodal":    func() float64 { return []float64{6, 330}[rng.IntN(2)] * (1 + 0.2*rng.Float64()) },
		"with zeros": func() float64 { return float64(rng.IntN(3)) * rng.Float64() },
		"negative":   func() float64 { return rng.NormFloat64() * 100 },
		"tiny":       func() float64 { return rng.Float64() * 1e-6 },
	}
	for name, gen := range gens {
		t.Run(name, func(t *testing.T) {
			var a, b, all Sketch
			xs := make([]float64, 20000)
			for i := range xs {
				xs[i] = gen()
				all.Add(xs[i])
				if i%2 == 0 {
					a.Add(xs[i])
				} else {
					b.Add(xs[i])
				}
			}
			a.Merge(&b)
			slices.Sort(xs)
			for q := 0.0; q <= 1.0; q += 0.001 {
				exact := Quantile(xs, q)
				for _, s := range []*Sketch{&all, &a} {
					got := s.Quantile(q)
					if math.Abs(got-exact) > SketchAlpha*math.Abs(exact)+1e-300 {
						t.Fatalf("q=%v: sketch %v, exact %v (rel %.4f%%)", q, got, exact, 100*math.Abs(got-exact)/math.Abs(exact))
					}
				}
			}
			if all.Count() != uint64(len(xs)) || all.Min() != xs[0] || all.Max() != xs[len(xs)-1] {
				t.Errorf("count/min/max %d %v %v", all.Count(), all.Min(), all.Max())
			}
		})
	}
}

// Memory depends on the range of values, not on how many.
func TestSketchBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var s Sketch
	sizes := []int{}
	for i := range 1_000_000 {
		s.Add(1 + 999*rng.Float64()) // 1 ms .. 1 s
		if i == 9_999 || i == 999_999 {
			sizes = append(sizes, s.Bytes())
		}
	}
	if sizes[1] > sizes[0]*2 || sizes[1] > 16<<10 {
		t.Errorf("bucket bytes %v after 10k and 1M samples: should not grow with count", sizes)
	}
}

func BenchmarkSketchAdd(b *testing.B) {
	var s Sketch
	x := 0.5
	for b.Loop() {
		s.Add(x)
		x = x*1.0001 + 0.001
		if x > 5000 {
			x = 0.5
		}
	}
}
