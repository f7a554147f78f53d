package exporter

import (
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// gate is a Gatherer whose gathers read the registry at once, then wait
// until released, counting how many run at once.
type gate struct {
	g              prometheus.Gatherer
	release        chan struct{}
	calls, running atomic.Int64
	maxRunning     atomic.Int64
}

func (g *gate) Gather() ([]*dto.MetricFamily, error) {
	g.calls.Add(1)
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for {
		m := g.maxRunning.Load()
		if n <= m || g.maxRunning.CompareAndSwap(m, n) {
			break
		}
	}
	mfs, err := g.g.Gather()
	<-g.release
	return mfs, err
}

// scrapeOnce scrapes with the given Accept and gzip choice and returns
// the status and the decoded body.
func scrapeOnce(t *testing.T, url, accept string, gz bool) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	} else {
		req.Header.Set("Accept-Encoding", "identity")
	}
	// A transport of its own: the default one would add and undo gzip.
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close() //nolint:errcheck // only read
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Error(err)
	}
	return resp.StatusCode, b
}

const protoAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// Scrapers that ask while a rendering is under way get another, which
// those asking while it waits for a slot share: every scrape sees the
// samples ingested before it asked, the late ones get at most a gather a
// slot and one waiting between them, and nothing is kept after.
func TestConcurrentScrapesShareOneGather(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "samples_total", Help: "h"})
	reg.MustRegister(c)
	c.Add(7)
	g := &gate{g: reg, release: make(chan struct{})}
	sc := newScrapes(g, slog.New(slog.DiscardHandler), 0)
	srv := httptest.NewServer(sc)
	defer srv.Close()

	const n = 10
	bodies := make([][]byte, n)
	var wg sync.WaitGroup
	scrape := func(i int) {
		defer wg.Done()
		code, b := scrapeOnce(t, srv.URL, "", i%2 == 0) // half take gzip
		if code != http.StatusOK {
			t.Errorf("scrape %d: %d", i, code)
		}
		bodies[i] = b
	}
	wg.Add(1)
	go scrape(0)
	for g.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// A sample acknowledged after the first rendering started reading,
	// before the others asked: they must see it.
	c.Add(1)
	for i := 1; i < n; i++ {
		wg.Add(1)
		go scrape(i)
	}
	for sc.joined.Load()+sc.made.Load() < n {
		time.Sleep(time.Millisecond)
	}
	close(g.release)
	wg.Wait()
	gathers := g.calls.Load()
	if gathers < 2 || gathers > 2+renderSlots-1 {
		t.Errorf("%d gathers for one scrape and %d that arrived during it, want 2 to %d", gathers, n-1, 2+renderSlots-1)
	}
	if !bytes.Contains(bodies[0], []byte("samples_total 7")) {
		t.Errorf("the first scrape lacks the counter at 7:\n%s", bodies[0])
	}
	for i := 1; i < n; i++ {
		if !bytes.Contains(bodies[i], []byte("samples_total 8")) {
			t.Errorf("scrape %d, asked after the sample was taken, lacks it:\n%s", i, bodies[i])
		}
		if !bytes.Equal(bodies[i], bodies[1]) {
			t.Errorf("scrape %d got another body:\n%s\nwant\n%s", i, bodies[i], bodies[1])
		}
	}
	// Nothing is kept: a scrape after the rendering sees new samples.
	c.Add(1)
	if _, b := scrapeOnce(t, srv.URL, "", true); !bytes.Contains(b, []byte("samples_total 9")) {
		t.Errorf("a later scrape got a stale body:\n%s", b)
	}
	if got := g.calls.Load(); got != gathers+1 {
		t.Errorf("%d gathers after a later scrape, want %d", got, gathers+1)
	}
}

// Renderings, whatever their formats, read the store at most renderSlots
// at once: memory holds that many renderings whatever the scrapers ask.
func TestScrapesGatherWithinSlots(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"}))
	g := &gate{g: reg, release: make(chan struct{})}
	sc := newScrapes(g, slog.New(slog.DiscardHandler), 0)
	srv := httptest.NewServer(sc)
	defer srv.Close()
	var wg sync.WaitGroup
	for _, accept := range []string{"", protoAccept, "text/plain;version=0.0.4", protoAccept} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, b := scrapeOnce(t, srv.URL, accept, true); code != 200 || len(b) == 0 {
				t.Errorf("Accept %q: %d, %d bytes", accept, code, len(b))
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let them all arrive; the bound holds either way
	close(g.release)
	wg.Wait()
	if m := g.maxRunning.Load(); m != renderSlots {
		t.Errorf("%d gathers ran at once, want %d", m, renderSlots)
	}
}

// The protobuf rendering decodes to the registry's families.
func TestScrapeProtobuf(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "d_seconds", Help: "h",
		Buckets: []float64{0.1, 1}, NativeHistogramBucketFactor: 1.1})
	reg.MustRegister(h)
	h.Observe(0.5)
	srv := httptest.NewServer(newScrapes(reg, slog.New(slog.DiscardHandler), 0))
	defer srv.Close()
	code, b := scrapeOnce(t, srv.URL, protoAccept, true)
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	// One length-delimited MetricFamily.
	n, k := protowireVarint(b)
	var mf dto.MetricFamily
	if k == 0 || proto.Unmarshal(b[k:k+int(n)], &mf) != nil {
		t.Fatalf("not a delimited MetricFamily: %x", b)
	}
	hist := mf.GetMetric()[0].GetHistogram()
	if mf.GetName() != "d_seconds" || hist.GetSampleCount() != 1 || len(hist.GetPositiveSpan()) == 0 {
		t.Errorf("family %v", &mf)
	}
}

func protowireVarint(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		if i == 10 {
			return 0, 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// The telemetry path answers GET and HEAD only.
func TestScrapeMethods(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, "TRACE", http.MethodPatch} {
		req, _ := http.NewRequest(m, srv.URL+"/metrics", strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /metrics: %d, Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	resp, err := http.Head(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != 0 {
		t.Errorf("HEAD /metrics: %d with %d bytes", resp.StatusCode, len(b))
	}
}

// Headers past the bound are refused before any handler runs, and the
// listener holds at most MaxConnections open connections.
func TestHeaderAndConnectionBounds(t *testing.T) {
	s, err := New(Config{MaxConnections: 2})
	if err != nil {
		t.Fatal(err)
	}
	sv := serveLoopback(t, s, connLimit)
	base := sv.URL

	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("X-Flood", strings.Repeat("a", 2*defaultMaxHeaderBytes))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("%d KiB of headers: %d, want 431", 2*defaultMaxHeaderBytes>>10, resp.StatusCode)
	}

	// Two connections that stall in their headers fill the listener.
	var stalled []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", sv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
		stalled = append(stalled, c)
	}
	client := &http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := client.Get(base + "/-/healthy"); err == nil {
		_ = resp.Body.Close()
		t.Errorf("a third connection was served while two were open (limit 2)")
	}
	_ = stalled[0].Close()
	client.Timeout = time.Minute
	resp, err = client.Get(base + "/-/healthy")
	if err != nil {
		t.Fatalf("after one closed: %v", err)
	}
	_ = resp.Body.Close()
	_ = stalled[1].Close()
}

// Stopping with a request in flight lets it finish within the grace
// period, cuts it past that, and is a clean stop either way, logged.
func TestShutdownGrace(t *testing.T) {
	for _, c := range []struct {
		name   string
		finish bool // the slow client finishes within the grace period
		logs   []string
	}{
		{"finished", true, []string{"Shutting down", "requests_in_flight=1"}},
		{"cut", false, []string{"Shutting down", "Grace period over", "cut=1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs syncBuffer
			s, err := New(Config{ShutdownGrace: 300 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			sv := serveLoopback(t, s)
			// A push whose body arrives slowly.
			pr, pw := io.Pipe()
			req, _ := http.NewRequest(http.MethodPost, sv.URL+"/v1/metrics", pr)
			req.Header.Set("Content-Type", "application/x-protobuf")
			respc := make(chan int, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					respc <- -1
					return
				}
				_ = resp.Body.Close()
				respc <- resp.StatusCode
			}()
			for s.httpBusy.Load() == nil || s.httpBusy.Load().n.Load() == 0 {
				time.Sleep(time.Millisecond) // until the push reaches its handler
			}
			sv.cancel()
			for !strings.Contains(logs.String(), "Shutting down") {
				time.Sleep(time.Millisecond)
			}
			if c.finish {
				_ = pw.Close() // an empty body: a valid, empty export
			}
			select {
			case <-sv.done:
				if sv.err != nil {
					t.Errorf("Serve returned %v, want nil", sv.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Serve did not return")
			}
			if c.finish {
				if code := <-respc; code != http.StatusOK {
					t.Errorf("the push in flight got %d, want 200", code)
				}
			}
			_ = pw.Close()
			for _, want := range c.logs {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("log lacks %q:\n%s", want, logs.String())
				}
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
