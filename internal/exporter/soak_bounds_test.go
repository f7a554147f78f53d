package exporter

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/otlp"
)

// The soak bounds (docs/benchmarks.md: peak RSS ≤ 256 MiB per attack, a
// scrape ≤ 1 s), asserted in CI on reduced attacks: the same hostile
// inputs as BenchmarkSoak, a fifth to an eighth of their size, each against
// a fresh exporter with default flags. The peak is the RSS high-water mark
// of a child process running the attack alone, reset before it (see
// soak_child_test.go); the scrape is judged by its CPU time, which a
// loaded machine does not inflate as it does the wall time. Each attack
// must also reach the exporter's limit it attacks where the full one
// does (dropped series, or refused requests), so the bounds are met with
// the limits working, not by an input too small to test them. Its inputs
// are well-formed, so only that limit can refuse them, and only its own
// counter may count them.

const (
	soakPeakMiB   = 256
	soakScrapeCPU = time.Second
)

// soakAttack is one reduced attack on one bound. run returns what that
// bound refused or dropped, as the bound's own counter counts it, which
// must be positive; and what anything else refused or dropped (empty:
// nothing), as every input is well-formed, so that only the bound can
// refuse it and a refusal for another reason cannot pass for the bound's.
type soakAttack struct {
	name string
	run  func(b *testing.B, st *soakTarget) (refused float64, other string)
}

// counts is a counter vector's non-zero counts by their label values in
// the order of the label names, joined with "/".
func counts(c *prometheus.CounterVec) map[string]float64 {
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		_ = m.Write(&d) // a counter of a CounterVec writes itself
		var lv []string
		for _, l := range d.GetLabel() {
			lv = append(lv, l.GetValue())
		}
		if v := d.GetCounter().GetValue(); v != 0 {
			out[strings.Join(lv, "/")] = v
		}
	}
	return out
}

// soakOverflow is what the limit named reason dropped
// (series_overflow_total), and every other drop or refusal: the other
// limits' overflows and every bad-input count, none of which may grow
// (the samples of a metric the metric limit refused are counted once,
// as its overflow).
func soakOverflow(st *soakTarget, reason string) (float64, string) {
	over, bad := counts(st.s.overflow), counts(st.s.bad)
	n := over[reason]
	delete(over, reason)
	if len(over) > 0 || len(bad) > 0 {
		return n, fmt.Sprintf("overflow %v, bad input %v (want none)", over, bad)
	}
	return n, ""
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

// overBodyLimit is a well-formed OTLP export request past the body limit
// by 1 KiB once decoded (a resource attribute of 'a's), gzipped to a few
// kilobytes: only the body limit can refuse it.
func overBodyLimit(limit int64) []byte {
	msg, _ := proto.Marshal(exportReq([]*commonpb.KeyValue{strAttr("host", strings.Repeat("a", int(limit)+1024))},
		sumMetric("k6_http_reqs", cumul, dbl(1, 1)))) // a valid message marshals
	var zipped bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&zipped, gzip.BestCompression) // a valid level
	_, _ = gz.Write(msg)                                        // in memory, cannot fail
	_ = gz.Close()                                              // in memory, cannot fail
	return zipped.Bytes()
}

func soakAttacks() []soakAttack {
	return []soakAttack{
		{"names (20,000 distinct metric names)", func(b *testing.B, st *soakTarget) (float64, string) {
			soakReplay(b, st, 20000, func(w io.Writer, i int) {
				_, _ = fmt.Fprintf(w, `{"type":"Metric","data":{"name":"custom_%d","type":"counter","contains":"default"},"metric":"custom_%d"}`+"\n", i, i)
				_, _ = fmt.Fprintf(w, `{"metric":"custom_%d","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{"testid":"t"}}}`+"\n", i)
			})
			return soakOverflow(st, OverflowMetrics)
		}},
		{"labels (100,000 distinct name tags)", func(b *testing.B, st *soakTarget) (float64, string) {
			soakReplay(b, st, 100000, func(w io.Writer, i int) {
				_, _ = fmt.Fprintf(w, `{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":%d,"tags":{"name":"https://example.test/item/%d","testid":"t"}}}`+"\n", i%5000, i)
			})
			return soakOverflow(st, OverflowSeries)
		}},
		{"resources (120,000 resource attribute sets)", func(b *testing.B, st *soakTarget) (float64, string) {
			postResources(b, st, 12)
			// Behind one series, beyond the stream limit (100,000).
			if n := st.s.st.nseries.Load(); n > 10 {
				return 0, fmt.Sprintf("%d series held for one counter", n)
			}
			return soakOverflow(st, OverflowStreams)
		}},
		{"bombs (20 parallel requests of 16 MiB + 1 KiB, gzipped)", func(b *testing.B, st *soakTarget) (float64, string) {
			body := overBodyLimit(st.s.cfg.OTLPMaxBody)
			var wg sync.WaitGroup
			codes := make([]int, 20)
			for i := range codes {
				wg.Go(func() { codes[i] = st.post(b, body, true) })
			}
			wg.Wait()
			// The body limit refuses each with 413, counted as too_large;
			// one that waited too long for a decoding slot, while others
			// were decoded, is refused by the in-flight bound with 503,
			// counted as busy. Nothing else may answer or be counted.
			answers := map[int]int{}
			for _, c := range codes {
				answers[c]++
			}
			tooLarge, busy := answers[http.StatusRequestEntityTooLarge], answers[http.StatusServiceUnavailable]
			want := map[string]float64{}
			if tooLarge > 0 {
				want[otlp.OutcomeTooLarge] = float64(tooLarge)
			}
			if busy > 0 {
				want[otlp.OutcomeBusy] = float64(busy)
			}
			wantBad := map[string]float64{} // by reason and source
			if tooLarge > 0 {
				wantBad[otlp.OutcomeTooLarge+"/"+SourceOTLP] = float64(tooLarge)
			}
			reqs, bad, over := counts(st.s.otlpReqs), counts(st.s.bad), counts(st.s.overflow)
			if tooLarge+busy != len(codes) || !maps.Equal(reqs, want) || !maps.Equal(bad, wantBad) || len(over) > 0 {
				return float64(tooLarge), fmt.Sprintf("answers %v; OTLP requests %v, bad input %v, overflow %v; want 413 or 503 only, each counted as too_large or busy", answers, reqs, bad, over)
			}
			return float64(tooLarge), ""
		}},
	}
}

// soakBound is what one reduced attack measured.
type soakBound struct {
	PeakMiB   float64       `json:"peak_rss_mib"`
	CPU, Wall time.Duration // the slowest of three scrapes
	Refused   float64       // refused or dropped by the attacked bound
	Other     string        // refused or dropped otherwise
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
			t.Logf("peak RSS %.0f MiB, slowest scrape %v CPU (%v wall), %g refused or dropped by the bound", r.PeakMiB, r.CPU, r.Wall, r.Refused)
			if r.PeakMiB == 0 || r.PeakMiB > soakPeakMiB {
				t.Errorf("peak RSS %.0f MiB, bound %d MiB", r.PeakMiB, soakPeakMiB)
			}
			if r.CPU > soakScrapeCPU {
				t.Errorf("slowest scrape took %v of CPU, bound %v", r.CPU, soakScrapeCPU)
			}
			if r.Refused <= 0 {
				t.Error("nothing refused or dropped by the bound: the attack does not reach it")
			}
			if r.Other != "" {
				t.Errorf("refused or dropped otherwise than by the bound: %s", r.Other)
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
		r.Refused, r.Other = a.run(b, st)
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
