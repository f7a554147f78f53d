package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// binnedRun draws a run of bins×per lognormal samples in time order and
// returns its time bins and its sorted samples. Each stretch of burst
// bins shares one latency factor exp(spread·ε), the bursts of slow
// requests of a real service; spread 0 gives independent samples.
func binnedRun(rng *rand.Rand, bins, per, burst int, spread float64) ([]*Sketch, []float64) {
	sks := make([]*Sketch, bins)
	all := make([]float64, 0, bins*per)
	f := 1.0
	for i := range sks {
		if i%burst == 0 {
			f = math.Exp(spread * rng.NormFloat64())
		}
		sks[i] = &Sketch{}
		for range per {
			x := f * math.Exp(0.5*rng.NormFloat64())
			sks[i].Add(x)
			all = append(all, x)
		}
	}
	slices.Sort(all)
	return sks, all
}

// The batches cover every sample, each with enough beyond the
// percentile, between BatchMin and BatchMax of them; too few samples
// give none.
func TestQuantileBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	tests := []struct {
		name      string
		bins, per int
		p         float64
		wantB     int // 0: nil
	}{
		{"median, many samples", 60, 100, 0.5, BatchMax},
		{"p95 of 1,000: BatchMax batches", 40, 25, 0.95, BatchMax},
		{"p95 of 600 in bins of 15: five batches of 105", 40, 15, 0.95, 5},
		{"p95 of 500 in bins of 5: five batches of 100", 100, 5, 0.95, 5},
		{"p99 of 2,000: four batches of 500", 40, 50, 0.99, 4},
		{"p99 of 1,000: too few beyond it", 40, 25, 0.99, 0},
		{"fewer bins than batches", 3, 1000, 0.5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sks, all := binnedRun(rng, tt.bins, tt.per, 1, 0)
			bs := QuantileBatches(sks, tt.p)
			if tt.wantB == 0 {
				if bs != nil {
					t.Fatalf("got %d batches, want none", len(bs))
				}
				return
			}
			if len(bs) != tt.wantB {
				t.Errorf("got %d batches, want %d", len(bs), tt.wantB)
			}
			var n uint64
			for _, b := range bs {
				n += b.N
				if float64(b.N)*math.Min(tt.p, 1-tt.p) < BatchMinBeyond-1e-9 {
					t.Errorf("batch of %d has fewer than %d beyond p %v", b.N, BatchMinBeyond, tt.p)
				}
			}
			if n != uint64(len(all)) {
				t.Errorf("batches hold %d samples, want %d", n, len(all))
			}
		})
	}
}

// Coverage of the true percentile, measured over many simulated runs:
// with independent samples both intervals hold it about 95% of the
// time; with slow requests in bursts the order-statistic interval,
// which assumes independence, falls far short, and the batch interval
// (the wider of the two, as the loader keeps) still holds it.
func TestBatchQuantileCICoverage(t *testing.T) {
	const reps = 300
	tests := []struct {
		name           string
		burst          int
		spread         float64
		p              float64
		batchMin       float64 // least coverage of the wider interval
		orderMax       float64 // most coverage of the order-statistic interval alone (1: no bound)
		orderMin       float64
		truthFromDraws int
	}{
		{name: "independent, p95", burst: 1, spread: 0, p: 0.95, batchMin: 0.90, orderMax: 1, orderMin: 0.90},
		{name: "independent, median", burst: 1, spread: 0, p: 0.5, batchMin: 0.90, orderMax: 1, orderMin: 0.90},
		{name: "bursts, p95", burst: 2, spread: 0.15, p: 0.95, batchMin: 0.85, orderMax: 0.75},
		{name: "bursts, median", burst: 2, spread: 0.15, p: 0.5, batchMin: 0.85, orderMax: 0.6},
	}
	for ti, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			truth := trueQuantile(rand.New(rand.NewPCG(99, uint64(ti))), tt.spread, tt.p)
			rng := rand.New(rand.NewPCG(uint64(ti), 17))
			var inBatch, inOrder int
			for range reps {
				sks, all := binnedRun(rng, 40, 100, tt.burst, tt.spread)
				q := Quantile(all, tt.p)
				olo, ohi, ook := QuantileCI(all, tt.p, 0.95)
				blo, bhi, bok := BatchQuantileCI(sks, tt.p, q, 0.95)
				if !ook || !bok {
					t.Fatalf("intervals missing: order %v, batch %v", ook, bok)
				}
				lo, hi, _ := WiderInterval(olo, ohi, ook, blo, bhi, bok)
				if lo <= truth && truth <= hi {
					inBatch++
				}
				if olo <= truth && truth <= ohi {
					inOrder++
				}
			}
			cb, co := float64(inBatch)/reps, float64(inOrder)/reps
			t.Logf("coverage: wider of batch and order-statistic %.3f, order-statistic alone %.3f", cb, co)
			if cb < tt.batchMin {
				t.Errorf("batch coverage %.3f below %.2f", cb, tt.batchMin)
			}
			if co > tt.orderMax || co < tt.orderMin {
				t.Errorf("order-statistic coverage %.3f outside [%.2f, %.2f]", co, tt.orderMin, tt.orderMax)
			}
		})
	}
}

// trueQuantile is the p quantile of the process binnedRun draws from,
// read from a million draws.
func trueQuantile(rng *rand.Rand, spread, p float64) float64 {
	xs := make([]float64, 1_000_000)
	for i := range xs {
		xs[i] = math.Exp(spread*rng.NormFloat64() + 0.5*rng.NormFloat64())
	}
	slices.Sort(xs)
	return Quantile(xs, p)
}

// BatchLogSE by hand: two batch values around q, and too few batches.
func TestBatchLogSE(t *testing.T) {
	e := math.E
	bs := []Batch{{100, e}, {100, 1 / e}, {100, e}, {100, 1 / e}}
	se, df, ok := BatchLogSE(bs, 1)
	// Σ n_b d² = 400, /(B−1) = 133.3, /N = 1/3.
	if !ok || df != 3 || math.Abs(se-math.Sqrt(1.0/3)) > 1e-12 {
		t.Errorf("BatchLogSE = %v, %d, %v; want %v, 3, true", se, df, ok, math.Sqrt(1.0/3))
	}
	if _, _, ok := BatchLogSE(bs[:3], 1); ok {
		t.Error("three batches gave an error")
	}
	if _, _, ok := BatchLogSE(bs, 0); ok {
		t.Error("a zero percentile gave an error")
	}
}

func TestWiderInterval(t *testing.T) {
	tests := []struct {
		name           string
		lo1, hi1       float64
		ok1            bool
		lo2, hi2       float64
		ok2            bool
		wantLo, wantHi float64
		wantOK         bool
	}{
		{"second wider", 9, 11, true, 8, 12, true, 8, 12, true},
		{"first wider", 8, 12, true, 9, 11, true, 8, 12, true},
		{"only the first", 9, 11, true, 0, 0, false, 9, 11, true},
		{"only the second", 0, 0, false, 9, 11, true, 9, 11, true},
		{"neither", 0, 0, false, 0, 0, false, 0, 0, false},
	}
	for _, tt := range tests {
		lo, hi, ok := WiderInterval(tt.lo1, tt.hi1, tt.ok1, tt.lo2, tt.hi2, tt.ok2)
		if lo != tt.wantLo || hi != tt.wantHi || ok != tt.wantOK {
			t.Errorf("%s: got %v %v %v", tt.name, lo, hi, ok)
		}
	}
}
