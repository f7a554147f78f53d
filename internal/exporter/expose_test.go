package exporter

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
)

// The scrape's rendering, family by family and histogram series by
// series, writes the bytes a whole gather encodes, in every format: a
// real k6 run plus more histogram series of one family than a text
// rendering step holds.
func TestExposeMatchesGather(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DisableExporterMetrics = true // their figures move between two gathers
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplayFile(fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-a.ndjson.gz")); err != nil {
		t.Fatal(err)
	}
	for i := range 3*textChunk + 5 {
		tags := map[string]string{"testid": "wide", "name": fmt.Sprintf("ep-%03d", i)}
		for j := range 20 {
			s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: float64(1 + (i*37+j*101)%5000), Tags: tags})
		}
	}
	g := s.Gatherer()
	for _, format := range acceptedFormats {
		var want, got bytes.Buffer
		if err := encodeAll(&want, g, format); err != nil {
			t.Fatal(err)
		}
		if err := g.(exposer).expose(&got, format, nil); err != nil {
			t.Fatal(err)
		}
		if want.Len() < 100_000 {
			t.Fatalf("%s: only %d bytes rendered: the fixture did not load", format, want.Len())
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: the rendering differs from the gather's encoding (%d against %d bytes)", format, got.Len(), want.Len())
		}
	}
}

// heapPeak runs f while sampling the heap's objects every 100 µs, with
// the collector at 10% headroom so that the samples follow live memory;
// it returns the peak above the live heap before f.
func heapPeak(f func()) (peak, live uint64) {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	live = sample[0].Value.Uint64()
	var top atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > top.Load() {
				top.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return top.Load() - min(live, top.Load()), live
}

// wideHistogramServer serves an exporter holding the widest histograms:
// 4,000 OTLP delta histograms of 1,024 explicit bounds each, which fill
// the native bucket budget. The caller stops it.
func wideHistogramServer(t *testing.T) (*Server, *served) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DisableExporterMetrics = true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sv := serveLoopback(t, s)
	if err := pushDeltaHists(sv.Addr, 4000, 1024); err != nil {
		sv.stop()
		t.Fatal(err)
	}
	return s, sv
}

// One scrape of the widest histograms holds little beyond what the store
// holds: 4,000 OTLP delta histograms with 1,024 explicit bounds each fill
// the native bucket budget. A decoded copy of every series took 26 bytes
// a native bucket above the live heap (50 MiB here, twice that under the
// collector's default headroom); the rendering, family by family and
// series by series, may take 12.
func TestScrapeOfWideHistogramsWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes 4,000 histograms of 1,025 buckets")
	}
	s, sv := wideHistogramServer(t)
	defer sv.stop()
	buckets := s.st.native.used.Load()
	if buckets < 4000*400 {
		t.Fatalf("%d native buckets held, want at least 400 a histogram", buckets)
	}
	sc := newScrapes(s.Gatherer(), slog.New(slog.DiscardHandler), 0)
	for _, format := range []expfmt.Format{expfmt.NewFormat(expfmt.TypeProtoDelim), expfmt.NewFormat(expfmt.TypeTextPlain)} {
		var n int
		peak, live := heapPeak(func() {
			gz, err := sc.encode(format, nil)
			if err != nil {
				t.Error(err)
			}
			n = len(gz)
		})
		perBucket := float64(peak) / float64(buckets)
		t.Logf("%s: %d native buckets, live heap %.1f MiB, scrape peak %.1f MiB above it (%.1f B a bucket), page %d bytes gzipped",
			format, buckets, float64(live)/(1<<20), float64(peak)/(1<<20), perBucket, n)
		if perBucket > 12 {
			t.Errorf("%s: a scrape took %.1f B a native bucket above the live heap, want ≤ 12", format, perBucket)
		}
	}
}

// OTLP bodies being received and a scrape being rendered share one
// memory bound: while stalled OTLP bodies hold most of the OTLP memory
// budget, a scrape of the widest histograms (which needs more than is
// left) is refused within a second with 503 and Retry-After, and the
// account never passes the budget; once the bodies are gone the scrape is
// answered and gives its memory back.
func TestScrapeSharesOTLPMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes 4,000 histograms of 1,025 buckets")
	}
	s, sv := wideHistogramServer(t)
	defer sv.stop()
	const stalled, sent = 4, 15 << 20 // bytes each sends of a 16 MiB body
	var conns []net.Conn
	for range stalled {
		c, err := net.Dial("tcp", sv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_, _ = fmt.Fprintf(c, "POST /v1/metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: %d\r\n\r\n", 16<<20)
		if _, err := c.Write(make([]byte, sent)); err != nil {
			t.Fatal(err)
		}
	}
	budget := DefaultConfig().OTLPMemoryBudget
	waitFor(t, func() bool { return s.mem.Load() >= stalled*sent }, "the stalled bodies charged")
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			peak.Store(max(peak.Load(), s.mem.Load()))
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	url := "http://" + sv.Addr + "/metrics"
	t0 := time.Now()
	code, hdr, body := scrapeWithHeaders(t, url)
	took := time.Since(t0)
	body = body[:min(len(body), 200)]
	close(stop)
	t.Logf("with %d MiB of OTLP bodies held: %d in %v, %q; the account peaked at %.1f of %d MiB", stalled*sent>>20, code, took, body, float64(peak.Load())/(1<<20), budget>>20)
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(body, "memory budget") {
		t.Errorf("a scrape past the shared memory budget: %d, Retry-After %q, %q; want 503 with Retry-After naming the memory budget", code, hdr.Get("Retry-After"), body)
	}
	if took > time.Second {
		t.Errorf("the refusal took %v, want ≤ 1 s", took)
	}
	if p := peak.Load(); p > budget {
		t.Errorf("the memory account reached %d bytes, over the %d-byte budget", p, budget)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	waitFor(t, func() bool { return s.mem.Load() == 0 }, "the stalled bodies given back")
	if code, _, body := scrapeWithHeaders(t, url); code != http.StatusOK || len(body) == 0 {
		t.Errorf("a scrape once the bodies are gone: %d, %d bytes", code, len(body))
	}
	if held := s.mem.Load(); held != 0 {
		t.Errorf("%d bytes still charged after the scrape was served", held)
	}
}

// scrapeWithHeaders scrapes as Prometheus does (protobuf, gzip) and
// returns the status, headers and body as sent.
func scrapeWithHeaders(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", protoAccept)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck // only read
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// waitFor waits up to 10 s for cond.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
