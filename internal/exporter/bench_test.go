package exporter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
)

var (
	benchLinesOnce sync.Once
	benchLines     [][]byte // baseline-a: Metric lines first, then points
)

func loadBenchLines(b *testing.B) [][]byte {
	benchLinesOnce.Do(func() {
		f, err := os.Open(fixtures.Path(b, "k6/baseline-mix-v2.2.0/baseline-a.ndjson.gz"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close() //nolint:errcheck // only read
		gz, err := gzip.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		all, err := io.ReadAll(gz)
		if err != nil {
			b.Fatal(err)
		}
		benchLines = bytes.SplitAfter(all, []byte("\n"))
	})
	return benchLines
}

// cpuTime is the process's user+system CPU time: on a shared machine
// wall-clock figures depend on the neighbours, CPU time much less.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // RUSAGE_SELF with a valid pointer cannot fail
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cycleReader repeats the fixture's lines until n lines were produced,
// so replays of any length run in constant input memory.
type cycleReader struct {
	lines [][]byte
	i, n  int
	cur   []byte
}

func (c *cycleReader) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		if len(c.cur) == 0 {
			if c.n == 0 {
				if w == 0 {
					return 0, io.EOF
				}
				return w, nil
			}
			c.cur = c.lines[c.i%len(c.lines)]
			c.i++
			c.n--
		}
		k := copy(p[w:], c.cur)
		c.cur = c.cur[k:]
		w += k
	}
	return w, nil
}

// BenchmarkIngestScraped parses and ingests k6 NDJSON lines (the live
// path: ParseNDJSONLine, series lookup, histogram observation) while a
// scraper renders /metrics in protobuf every second.
func BenchmarkIngestScraped(b *testing.B) {
	lines := loadBenchLines(b)
	s, err := New(Config{DisableExporterMetrics: true, Envelope: testEnvelope()})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	stop := make(chan struct{})
	scrapes := 0
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
				req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					scrapes++
				}
			}
		}
	})
	li := s.newLineIngester(SourceNDJSON, "bench", true)
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		li.line(lines[i%len(lines)])
	}
	li.flush()
	el := time.Since(start)
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(b.N)/el.Seconds(), "lines/s")
	b.ReportMetric(float64(b.N)/(cpuTime()-cpu0).Seconds(), "lines/cpu-s")
	b.ReportMetric(float64(scrapes), "scrapes")
}

// BenchmarkScrape renders /metrics with 10,000 k6 series, in the text
// format and in protobuf (what Prometheus asks for with native histograms).
func BenchmarkScrape(b *testing.B) {
	for _, kind := range []string{"counters", "histograms"} {
		for _, format := range []expfmt.FormatType{expfmt.TypeTextPlain, expfmt.TypeProtoDelim} {
			b.Run(fmt.Sprintf("%s/%s", kind, map[expfmt.FormatType]string{expfmt.TypeTextPlain: "text", expfmt.TypeProtoDelim: "protobuf"}[format]), func(b *testing.B) {
				s, err := New(Config{DisableExporterMetrics: true, Envelope: testEnvelope()})
				if err != nil {
					b.Fatal(err)
				}
				metric := "http_reqs"
				if kind == "histograms" {
					metric = "http_req_duration"
				}
				for i := range 10000 {
					tags := map[string]string{"testid": "bench", "scenario": "s", "name": "endpoint-" + strconv.Itoa(i%500),
						"method": "GET", "status": strconv.Itoa(200 + i/500), "expected_response": "true", "group": ""}
					for j := range 20 { // a spread of latencies: 20 native buckets per series
						s.IngestPoint(&k6.Point{Metric: metric, Value: float64(1+j*j) * 3.7, Tags: tags})
					}
				}
				if n := s.st.nseries.Load(); n != 10000 {
					b.Fatalf("%d series", n)
				}
				h := s.Handler()
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				req.Header.Set("Accept", string(expfmt.NewFormat(format)))
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Fatal(rec.Code)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/scrape")
				b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/scrape")
			})
		}
	}
}

// BenchmarkReplayMemory replays 1 and 10 million NDJSON lines (the
// baseline-a run repeated) and reports the heap the exporter retains
// after each (live heap after GC minus the input held by the benchmark):
// it must not grow with the number of points. B/op is what was allocated
// on the way (garbage), not what is kept.
func BenchmarkReplayMemory(b *testing.B) {
	lines := loadBenchLines(b)
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			var heap, base uint64
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var ms0 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				base = ms0.HeapAlloc // the input lines held in memory
				s, err := New(Config{DisableExporterMetrics: true})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.replayReader("bench", &cycleReader{lines: lines, n: n}); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap = ms.HeapAlloc - min(base, ms.HeapAlloc)
				runtime.KeepAlive(s)
			}
			b.ReportMetric(float64(heap)/(1<<20), "MiB-retained")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/line")
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// realisticServer fills a server as a real k6 test with several
// scenarios, endpoints and statuses does: per (scenario, endpoint,
// status) label set an http_req_duration histogram (its classic buckets,
// _sum and _count), http_reqs and http_req_failed; per scenario
// iteration_duration, iterations, data and checks; vus gauges. It
// returns the server and how many Prometheus series (sample lines of the
// text format, the count Prometheus's series limits apply to) it exposes.
func realisticServer(b *testing.B, scenarios, endpoints, statuses int) *Server {
	s, err := New(Config{DisableExporterMetrics: true, Envelope: testEnvelope()})
	if err != nil {
		b.Fatal(err)
	}
	codes := []string{"200", "201", "404", "500", "503", "302"}
	for sc := range scenarios {
		scen := "scenario-" + strconv.Itoa(sc)
		for e := range endpoints {
			name := "endpoint-" + strconv.Itoa(e)
			method := []string{"GET", "POST"}[e%2]
			for st := range statuses {
				ok := st < 2
				tags := map[string]string{"testid": "bench", "scenario": scen, "name": name, "method": method,
					"status": codes[st], "expected_response": strconv.FormatBool(ok), "group": "::" + name}
				for j := range 20 { // latencies spread over the ladder
					s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: float64(1+j*j) * 3.7, Tags: tags})
					s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: tags})
					s.IngestPoint(&k6.Point{Metric: "http_req_failed", Value: float64(j % 2), Tags: tags})
				}
			}
		}
		tags := map[string]string{"testid": "bench", "scenario": scen}
		for j := range 20 {
			s.IngestPoint(&k6.Point{Metric: "iteration_duration", Value: float64(100 + j*50), Tags: tags})
			s.IngestPoint(&k6.Point{Metric: "iterations", Value: 1, Tags: tags})
			s.IngestPoint(&k6.Point{Metric: "data_sent", Value: 512, Tags: tags})
			s.IngestPoint(&k6.Point{Metric: "data_received", Value: 4096, Tags: tags})
		}
		for c := range 5 {
			ct := map[string]string{"testid": "bench", "scenario": scen, "check": "check-" + strconv.Itoa(c)}
			s.IngestPoint(&k6.Point{Metric: "checks", Value: 1, Tags: ct})
			s.IngestPoint(&k6.Point{Metric: "checks", Value: 0, Tags: ct})
		}
	}
	for _, m := range []string{"vus", "vus_max"} {
		s.IngestPoint(&k6.Point{Metric: m, Value: 50, Tags: map[string]string{"testid": "bench"}})
	}
	return s
}

// exposedSeries counts the sample lines of the text exposition.
func exposedSeries(b *testing.B, h http.Handler) int {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	n := 0
	for line := range bytes.Lines(rec.Body.Bytes()) {
		if len(line) > 1 && line[0] != '#' {
			n++
		}
	}
	return n
}

// BenchmarkScrapeRealistic renders /metrics for a k6 test of 3 scenarios
// × 26 endpoints × 4 statuses: 312 histogram label sets, about 10,000
// Prometheus series in all (each classic bucket, _sum and _count counts
// as one), in the text format and in protobuf.
func BenchmarkScrapeRealistic(b *testing.B) {
	s := realisticServer(b, 3, 26, 4)
	h := s.Handler()
	series := exposedSeries(b, h)
	if series < 9000 || series > 11000 {
		b.Fatalf("%d series, want about 10,000", series)
	}
	for _, format := range []expfmt.FormatType{expfmt.TypeTextPlain, expfmt.TypeProtoDelim} {
		b.Run(map[expfmt.FormatType]string{expfmt.TypeTextPlain: "text", expfmt.TypeProtoDelim: "protobuf"}[format], func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept", string(expfmt.NewFormat(format)))
			b.ReportAllocs()
			cpu0 := cpuTime()
			w := &discardWriter{h: http.Header{}}
			for b.Loop() {
				w.code, w.n = 0, 0
				h.ServeHTTP(w, req)
				if w.code != 200 && w.code != 0 {
					b.Fatal(w.code)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/scrape")
			b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/scrape")
			b.ReportMetric(float64(series), "series")
			b.ReportMetric(float64(w.n), "body-B")
		})
	}
}

// discardWriter is a ResponseWriter that counts and drops the body, as a
// socket does: httptest.ResponseRecorder's growing buffer would add a
// cost (copying and zeroing megabytes) that a real scrape does not pay.
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	w.code = code
}
func (w *discardWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
