package exporter

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The soak bounds (docs/benchmarks.md: peak RSS ≤ 256 MiB per attack, a
// scrape ≤ 1 s), asserted in CI on reduced attacks: the same hostile
// inputs as BenchmarkSoak, a fifth to an eighth of their size, each against
// a fresh exporter with default flags. The peak is the RSS high-water mark
// of a child process running the attack alone, reset before it (see
// soak_child_test.go); the scrape is judged by its CPU time, which a
// loaded machine does not inflate as it does the wall time. Each attack
// must also reach the exporter's limits where the full one does (dropped
// series, or refused requests), so the bounds are met with the limits
// working, not by an input too small to test them.

const (
	soakPeakMiB   = 256
	soakScrapeCPU = time.Second
)

// soakAttack is one reduced attack; it returns what the exporter refused
// or dropped, which must be positive.
type soakAttack struct {
	name string
	run  func(b *testing.B, st *soakTarget) float64
}

func soakOverflow(st *soakTarget) float64 {
	var n float64
	for _, r := range []string{OverflowSeries, OverflowMetrics, OverflowStreams} {
		n += testutil.ToFloat64(st.s.overflow.WithLabelValues(r))
	}
	return n
}

// soakReplay replays n NDJSON lines from line(i).
func soakReplay(b *testing.B, st *soakTarget, n int, line func(w io.Writer, i int)) {
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriter(pw)
		for i := range n {
			line(w, i)
		}
		_ = pw.CloseWithError(w.Flush()) // always nil
	}()
	if _, err := st.s.replayReader("soak", pr); err != nil {
		b.Fatal(err)
	}
}

func soakAttacks() []soakAttack {
	return []soakAttack{
		{"names (20,000 distinct metric names)", func(b *testing.B, st *soakTarget) float64 {
			soakReplay(b, st, 20000, func(w io.Writer, i int) {
				_, _ = fmt.Fprintf(w, `{"type":"Metric","data":{"name":"custom_%d","type":"counter","contains":"default"},"metric":"custom_%d"}`+"\n", i, i)
				_, _ = fmt.Fprintf(w, `{"metric":"custom_%d","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{"testid":"t"}}}`+"\n", i)
			})
			return soakOverflow(st)
		}},
		{"labels (100,000 distinct name tags)", func(b *testing.B, st *soakTarget) float64 {
			soakReplay(b, st, 100000, func(w io.Writer, i int) {
				_, _ = fmt.Fprintf(w, `{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":%d,"tags":{"name":"https://example.test/item/%d","testid":"t"}}}`+"\n", i%5000, i)
			})
			return soakOverflow(st)
		}},
		{"resources (120,000 resource attribute sets)", func(b *testing.B, st *soakTarget) float64 {
			postResources(b, st, 12)
			// Behind one series, beyond the stream limit (100,000).
			if n := st.s.st.nseries.Load(); n > 10 {
				b.Logf("%d series held for one counter", n)
				return 0
			}
			return soakOverflow(st)
		}},
		{"bombs (20 parallel gzip bombs of 16 MiB)", func(b *testing.B, st *soakTarget) float64 {
			var zipped bytes.Buffer
			gz, _ := gzip.NewWriterLevel(&zipped, gzip.BestCompression)
			_, _ = gz.Write(make([]byte, 16<<20-64)) // in memory, cannot fail
			_ = gz.Close()                           // in memory, cannot fail
			var wg sync.WaitGroup
			codes := make([]int, 20)
			for i := range codes {
				wg.Go(func() { codes[i] = st.post(b, zipped.Bytes(), true) })
			}
			wg.Wait()
			refused := 0.0
			for _, c := range codes {
				if c == http.StatusServiceUnavailable || c == http.StatusBadRequest || c == http.StatusRequestEntityTooLarge {
					refused++
				}
			}
			return refused
		}},
	}
}

// soakBound is what one reduced attack measured.
type soakBound struct {
	PeakMiB   float64       `json:"peak_rss_mib"`
	CPU, Wall time.Duration // the slowest of three scrapes
	Refused   float64       // refused or dropped
}

func TestSoakBounds(t *testing.T) {
	if name, ok := soakChild("TestSoakBounds"); ok {
		reportSoakChild(t, runSoakBound(t, name))
		return
	}
	if testing.Short() {
		t.Skip("hostile inputs at a fifth to an eighth of the soak's size")
	}
	for _, a := range soakAttacks() {
		t.Run(a.name, func(t *testing.T) {
			var r soakBound
			runSoakChild(t, "TestSoakBounds", a.name, &r)
			t.Logf("peak RSS %.0f MiB, slowest scrape %v CPU (%v wall), %g refused or dropped", r.PeakMiB, r.CPU, r.Wall, r.Refused)
			if r.PeakMiB == 0 || r.PeakMiB > soakPeakMiB {
				t.Errorf("peak RSS %.0f MiB, bound %d MiB", r.PeakMiB, soakPeakMiB)
			}
			if r.CPU > soakScrapeCPU {
				t.Errorf("slowest scrape took %v of CPU, bound %v", r.CPU, soakScrapeCPU)
			}
			if r.Refused <= 0 {
				t.Error("nothing refused or dropped: the attack no longer reaches the exporter's limits")
			}
		})
	}
}

// runSoakBound runs the reduced attack of that name in this process (a
// child of TestSoakBounds) and returns what it measured.
func runSoakBound(t *testing.T, name string) soakBound {
	i := slices.IndexFunc(soakAttacks(), func(a soakAttack) bool { return a.name == name })
	if i < 0 {
		t.Fatalf("no soak attack %q", name)
	}
	a := soakAttacks()[i]
	var r soakBound
	ran, ok := false, false
	resetSoakPeak(t)
	// testing.Benchmark gives the soak's helpers their *testing.B; the
	// attack runs once, later calls return at once.
	testing.Benchmark(func(b *testing.B) {
		if ran {
			return
		}
		ran = true
		st, stop := startSoak(b)
		defer stop()
		r.Refused = a.run(b, st)
		for range 3 {
			c0, t0 := cpuTime(), time.Now()
			resp, err := http.Get(st.base + "/metrics")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("scrape: %d", resp.StatusCode)
			}
			r.CPU, r.Wall = max(r.CPU, cpuTime()-c0), max(r.Wall, time.Since(t0))
		}
		r.PeakMiB = procKiB(b, "VmHWM") / 1024
		ok = true
	})
	if !ok {
		t.Fatal("the attack did not complete (see the output above)")
	}
	return r
}
