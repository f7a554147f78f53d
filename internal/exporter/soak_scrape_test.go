package exporter

// Scrapers and header floods against a full store, at full size in the
// soak benchmark (each attack in its own process, as BenchmarkSoak):
//
//	go test -c -o exporter.test ./internal/exporter/
//	for a in 1 2 10 50 deltahist headers; do
//	  ./exporter.test -test.run '^$' -test.bench "SoakScrapers/^$a\$" -test.benchtime 1x
//	done
//
// and at reduced size in TestSoakScrapersBounded, which runs the same
// attack in a child process (see soak_child_test.go) and asserts its
// bounds.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// scrapeAttack is one attack's size.
type scrapeAttack struct {
	Series   int           // histogram series in the store
	Samples  int           // samples per series
	Scrapers int           // concurrent scrapers
	For      time.Duration // how long they scrape, each in a loop
	// HeaderConns connections each send HeaderBytes of headers in
	// HeaderLine-byte lines and stall, before the scrapers start.
	HeaderConns, HeaderBytes, HeaderLine int
	// DeltaHists OTLP delta histograms with DeltaBounds explicit bounds
	// each, every bucket filled, are pushed before the scrapers start.
	DeltaHists, DeltaBounds int
	// GRPCBombs valid gRPC bombs (16 MiB decoded) are sent at once, wave
	// after wave, while the scrapers scrape.
	GRPCBombs int
}

// scrapeResult is what an attack measured.
type scrapeResult struct {
	PeakRSSMiB   float64 `json:"peak_rss_mib"`
	Scrapes      int     `json:"scrapes"`
	Refused      int     `json:"refused"` // 503
	Failed       int     `json:"failed"`  // no answer or another status
	P50Ms, MaxMs float64
	// CPUMsPerScrape is the process's CPU time while scraping (server
	// and scrapers) over the scrapes answered.
	CPUMsPerScrape float64 `json:"cpu_ms_per_scrape"`
}

// fillHistograms replays series × samples http_req_duration points, one
// name tag value per series.
func fillHistograms(s *Server, series, samples int) error {
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriter(pw)
		for j := range samples {
			for i := range series {
				_, _ = fmt.Fprintf(w, `{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":%d.%03d,"tags":{"name":"ep-%05d","testid":"t"}}}`+"\n", 1+(i*7+j*13)%900, j, i)
			}
		}
		_ = pw.CloseWithError(w.Flush()) // always nil
	}()
	_, err := s.replayReader("scrapers", pr)
	return err
}

// runScrapeAttack fills a default exporter, opens the header flood,
// then runs the scrapers, as Prometheus scrapes (protobuf with native
// histograms, gzip).
func runScrapeAttack(tb testing.TB, a scrapeAttack) (scrapeResult, error) {
	var res scrapeResult
	SetMemoryLimit(DefaultMemoryLimit) // as serve does by default
	s, err := New(DefaultConfig())
	if err != nil {
		return res, err
	}
	if err := fillHistograms(s, a.Series, a.Samples); err != nil {
		return res, err
	}
	sv := serveLoopback(tb, s, connLimit)
	defer sv.stop()
	addr := sv.Addr
	if err := pushDeltaHists(addr, a.DeltaHists, a.DeltaBounds); err != nil {
		return res, err
	}

	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			_ = c.Close()
		}
	}()
	for range a.HeaderConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break // the accept queue is full: the flood is what it is
		}
		flood = append(flood, c)
		go func() {
			line := "X-F: " + strings.Repeat("a", max(a.HeaderLine-7, 1)) + "\r\n"
			_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n")
			for sent := 0; sent < a.HeaderBytes; sent += len(line) {
				if _, err := io.WriteString(c, line); err != nil {
					return // refused past the header bound
				}
			}
		}()
	}
	time.Sleep(time.Second) // the flood is in

	bombsDone := make(chan struct{})
	var bombing atomic.Bool
	if a.GRPCBombs > 0 {
		body := bombBody("valid")
		gs := serveLoopback(tb, s, grpcReceiver)
		defer gs.stop()
		bombing.Store(true)
		go func() {
			defer close(bombsDone)
			for bombing.Load() {
				if _, err := sendBombs(&soakTarget{s: s}, gs.Addr, body, a.GRPCBombs); err != nil {
					return
				}
			}
		}()
	} else {
		close(bombsDone)
	}

	var (
		mu   sync.Mutex
		lat  []float64
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	// As Prometheus: gzip asked for and read as sent (Prometheus
	// decompresses in its own process, not in the exporter's).
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: a.Scrapers, DisableCompression: true}}
	cpu0 := cpuTime()
	for range a.Scrapers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
				req.Header.Set("Accept", protoAccept)
				req.Header.Set("Accept-Encoding", "gzip")
				t0 := time.Now()
				resp, err := client.Do(req)
				code := -1
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					code = resp.StatusCode
				}
				ms := float64(time.Since(t0).Microseconds()) / 1000
				mu.Lock()
				switch code {
				case http.StatusOK:
					lat = append(lat, ms)
				case http.StatusServiceUnavailable:
					res.Refused++
				default:
					res.Failed++
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(a.For)
	stop.Store(true)
	bombing.Store(false)
	wg.Wait()
	<-bombsDone
	res.CPUMsPerScrape = float64((cpuTime() - cpu0).Microseconds()) / 1000 / float64(max(len(lat), 1))
	slices.Sort(lat)
	res.Scrapes = len(lat)
	if len(lat) > 0 {
		res.P50Ms, res.MaxMs = lat[len(lat)/2], lat[len(lat)-1]
	}
	peak, err := statusKiB("VmHWM")
	res.PeakRSSMiB = peak / 1024
	return res, err
}

// pushDeltaHists pushes n OTLP delta histograms of k6_http_req_duration
// (one name each) with bounds explicit bounds, 100 to a request.
func pushDeltaHists(addr string, n, bounds int) error {
	for i := 0; i < n; i += 100 {
		var dps []*metricpb.HistogramDataPoint
		for j := i; j < min(i+100, n); j++ {
			dp := &metricpb.HistogramDataPoint{Attributes: []*commonpb.KeyValue{strAttr("name", fmt.Sprint("d", j)), strAttr("testid", "t")},
				StartTimeUnixNano: 1, TimeUnixNano: 2, Sum: ptr(0.0)}
			for k := range bounds {
				dp.ExplicitBounds = append(dp.ExplicitBounds, float64(k+1)*0.5)
			}
			for range bounds + 1 {
				dp.BucketCounts = append(dp.BucketCounts, 1)
			}
			dp.Count = uint64(bounds + 1)
			*dp.Sum = float64(bounds) * float64(bounds+1) / 4
			dps = append(dps, dp)
		}
		body, err := proto.Marshal(exportReq(nil, histMetric(delta, dps...)))
		if err != nil {
			return err
		}
		resp, err := http.Post("http://"+addr+"/v1/metrics", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("push of delta histograms %d-%d: %s", i, i+len(dps), resp.Status)
		}
	}
	return nil
}

func BenchmarkSoakScrapers(b *testing.B) {
	full := scrapeAttack{Series: 10000, Samples: 30, For: 10 * time.Second}
	for _, n := range []int{1, 2, 10, 50} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			a := full
			a.Scrapers = n
			if n == 50 {
				a.For = 30 * time.Second
			}
			for b.Loop() {
				reportScrapeAttack(b, a)
			}
		})
	}
	// 4,000 OTLP delta histograms with 1,024 bounds each, then 10
	// scrapers.
	b.Run("deltahist", func(b *testing.B) {
		a := scrapeAttack{Scrapers: 10, For: 10 * time.Second, DeltaHists: 4000, DeltaBounds: 1024}
		for b.Loop() {
			reportScrapeAttack(b, a)
		}
	})
	// 300 connections each stall in ~1 MiB of 13-byte header lines
	// while 2 scrapers scrape.
	b.Run("headers", func(b *testing.B) {
		a := full
		a.Scrapers, a.HeaderConns, a.HeaderBytes, a.HeaderLine = 2, 300, 1<<20, 13
		for b.Loop() {
			reportScrapeAttack(b, a)
		}
	})
}

func reportScrapeAttack(b *testing.B, a scrapeAttack) {
	r, err := runScrapeAttack(b, a)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.PeakRSSMiB, "peak_rss_MiB")
	b.ReportMetric(r.P50Ms, "p50_scrape_ms")
	b.ReportMetric(r.MaxMs, "max_scrape_ms")
	b.ReportMetric(float64(r.Scrapes), "scrapes")
	b.ReportMetric(r.CPUMsPerScrape, "cpu_ms/scrape")
	b.ReportMetric(float64(r.Refused), "refused")
	b.ReportMetric(float64(r.Failed), "failed")
	// The median, not the slowest: on a loaded machine one scrape can
	// wait for a core whatever the exporter does.
	if r.PeakRSSMiB > 256 || r.P50Ms > 1000 || r.Failed > 0 || r.Scrapes == 0 {
		b.Errorf("over the bounds (peak RSS ≤ 256 MiB, median scrape ≤ 1 s, none failed): %+v", r)
	}
}

// TestSoakScrapersBounded runs reduced scraper and header-flood attacks,
// each in a child process so that the peak RSS is the attack's, and
// asserts their bounds: memory independent of the number of scrapers,
// scrapes answered under a header flood.
func TestSoakScrapersBounded(t *testing.T) {
	if a, ok := soakChild("TestSoakScrapersBounded"); ok {
		var at scrapeAttack
		if err := json.Unmarshal([]byte(a), &at); err != nil {
			t.Fatal(err)
		}
		resetSoakPeak(t)
		r, err := runScrapeAttack(t, at)
		if err != nil {
			t.Fatal(err)
		}
		reportSoakChild(t, r)
		return
	}
	if testing.Short() {
		t.Skip("runs child processes for several seconds")
	}
	base := scrapeAttack{Series: 2000, Samples: 30, For: 2 * time.Second}
	one, ten, flood := base, base, base
	one.Scrapers, ten.Scrapers = 1, 10
	flood.Scrapers, flood.HeaderConns, flood.HeaderBytes, flood.HeaderLine = 1, 100, 1<<20, 13
	deltas := scrapeAttack{Scrapers: 10, For: 2 * time.Second, DeltaHists: 400, DeltaBounds: 1024}
	// The widest histograms at full size, scraped by ten while valid gRPC
	// bombs arrive, 50 at a time: the OTLP bodies and the scrapes stay
	// within the same bounds.
	bombed := scrapeAttack{Scrapers: 10, For: 5 * time.Second, DeltaHists: 4000, DeltaBounds: 1024, GRPCBombs: 50}
	r1, r10, rf, rd, rb := childAttack(t, one), childAttack(t, ten), childAttack(t, flood), childAttack(t, deltas), childAttack(t, bombed)
	t.Logf("1 scraper: %+v", r1)
	t.Logf("10 scrapers: %+v", r10)
	t.Logf("header flood: %+v", rf)
	t.Logf("10 scrapers of wide delta histograms: %+v", rd)
	t.Logf("10 scrapers of the widest delta histograms under 50 gRPC bombs at a time: %+v", rb)
	// Sharing one gather: ten scrapers cost little more than one (the
	// slack is for the goroutines, connections and buffers of ten).
	if r10.PeakRSSMiB > r1.PeakRSSMiB*1.25+16 {
		t.Errorf("10 scrapers peaked at %.0f MiB against %.0f MiB for one", r10.PeakRSSMiB, r1.PeakRSSMiB)
	}
	for _, r := range []scrapeResult{r1, r10, rf, rd, rb} {
		if r.PeakRSSMiB > 256 || r.Failed > 0 || r.Scrapes == 0 {
			t.Errorf("over the bounds (peak RSS ≤ 256 MiB, scrapes answered, none failed): %+v", r)
		}
	}
	// 100 stalled connections of headers hold at most the header bound
	// each.
	if rf.PeakRSSMiB > r1.PeakRSSMiB+100*float64(defaultMaxHeaderBytes)*4/(1<<20) {
		t.Errorf("the header flood peaked at %.0f MiB against %.0f MiB without it", rf.PeakRSSMiB, r1.PeakRSSMiB)
	}
}

// childAttack runs a in a child process and returns what it measured.
func childAttack(t *testing.T, a scrapeAttack) scrapeResult {
	t.Helper()
	spec, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var r scrapeResult
	runSoakChild(t, "TestSoakScrapersBounded", string(spec), &r)
	return r
}
