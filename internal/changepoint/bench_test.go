package changepoint

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/envelope-dev/envelope/internal/figures"
)

// benchSeries are 50 series of n runs: log-normal noise, a step in every
// fifth series, an outlier now and then, p95-like series with intervals.
func benchSeries(n int) []Series {
	rng := rand.New(rand.NewPCG(7, 7))
	out := make([]Series, 50)
	for j := range out {
		k := Key{"bench", figures.LatencyNames()[j%5], fmt.Sprintf("ep%02d", j/5)}
		s := Series{Key: k, Polarity: figures.HigherIsWorse, Runs: make([]Run, n)}
		for i := range s.Runs {
			y := math.Log(100) + 0.05*rng.NormFloat64()
			if j%5 == 0 && i > n/2 {
				y += 0.15
			}
			if rng.IntN(500) == 0 {
				y += 0.5
			}
			r := Run{Commit: fmt.Sprintf("c%05d", i), Value: math.Exp(y), Count: 1000}
			if k.Figure == "p95" || k.Figure == "p99" {
				r.Lo, r.Hi = r.Value*0.95, r.Value*1.05
			}
			s.Runs[i] = r
		}
		out[j] = s
	}
	return out
}

// 10,000 runs × 50 series analysed from scratch.
//
//	go test ./internal/changepoint/ -run '^$' -bench 'Scratch|Append' -benchmem
func BenchmarkScratch10000x50(b *testing.B) {
	series := benchSeries(10000)
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		res, err := Analyze(Config{}, series)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Changes) < 10 {
			b.Fatalf("%d changes, want the 10 steps", len(res.Changes))
		}
	}
}

// analysed10000 is an analyzer that has analysed the first 10,000 runs of
// the 50 benchmark series, which hold 4,096 more runs to append.
func analysed10000(b *testing.B) ([]Series, *Analyzer) {
	b.Helper()
	series := benchSeries(10000 + 4096)
	a, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range series {
		for _, r := range s.Runs[:10000] {
			if err := a.Append(s.Key, s.Polarity, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	a.Result()
	return series, a
}

// Appending one run to each of the 50 series of a 10,000-run history and
// analysing again: what recording a run costs.
func BenchmarkAppend10000x50(b *testing.B) {
	series, a := analysed10000(b)
	next := 10000
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		if next == len(series[0].Runs) {
			b.Fatal("out of prepared runs")
		}
		for _, s := range series {
			if err := a.Append(s.Key, s.Polarity, s.Runs[next]); err != nil {
				b.Fatal(err)
			}
		}
		next++
		a.Result()
	}
}

// What a new process pays to record one run into a 10,000-run history of
// 50 series: restore the analyzer from its checkpoint, append the run to
// every series, analyse, and take the next checkpoint.
func BenchmarkRestoreAppend10000x50(b *testing.B) {
	series, a := analysed10000(b)
	data, err := a.Checkpoint()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(data)), "checkpoint-bytes")
	next := 10000
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		if next == len(series[0].Runs) {
			b.Fatal("out of prepared runs")
		}
		a, err := Restore(data)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range series {
			if err := a.Append(s.Key, s.Polarity, s.Runs[next]); err != nil {
				b.Fatal(err)
			}
		}
		next++
		a.Result()
		if data, err = a.Checkpoint(); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU adds the process's CPU time per operation to the benchmark's
// figures: on a shared machine the wall time says more about the other
// jobs than about the code.
func reportCPU(b *testing.B) func() {
	start, ok := cpuTime()
	return func() {
		if end, ok2 := cpuTime(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64((end-start).Milliseconds())/float64(b.N), "cpu-ms/op")
		}
	}
}
