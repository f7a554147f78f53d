package exporter

// The soak benchmark: each attack of the hostile suite at full size
// against one exporter with default flags, served over loopback. It
// reports the process's peak RSS (VmHWM), its RSS after the attack and
// the slowest of three /metrics scrapes. Run each attack in its own
// process so the peak is that attack's:
//
//	go test -c -o exporter.test ./internal/exporter/
//	for a in wide names resources labels bombs grpcbombs runs; do
//	  ./exporter.test -test.run '^$' -test.bench "Soak/^$a\$" -test.benchtime 1x
//	done

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/promtest"

	"github.com/prometheus/client_golang/prometheus/testutil"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/otlp"
	"github.com/envelope-dev/envelope/internal/testenv"
)

// procKiB reads a VmXXX figure of this process (Linux): where there is
// no /proc the benchmark skips (fails in CI), and it fails on a field it
// lacks.
func procKiB(b testing.TB, field string) float64 {
	n, err := statusKiB(field)
	if errors.Is(err, fs.ErrNotExist) {
		testenv.Missing(b, "/proc/self/status", "the figures are Linux's procfs counters")
	}
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// statusKiB reads a VmXXX figure of this process from /proc/self/status.
func statusKiB(field string) (float64, error) {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		}
	}
	return 0, fmt.Errorf("%s not in /proc/self/status", field)
}

type soakTarget struct {
	s    *Server
	base string
}

func startSoak(b testing.TB) (*soakTarget, func()) {
	SetMemoryLimit(DefaultMemoryLimit) // as serve does by default
	s, err := New(DefaultConfig())     // default flags
	if err != nil {
		b.Fatal(err)
	}
	sv := serveLoopback(b, s)
	return &soakTarget{s: s, base: sv.URL}, sv.stop
}

// serveGRPC starts the exporter's OTLP/gRPC receiver on loopback; stop
// stops it.
func (st *soakTarget) serveGRPC(b testing.TB) (addr string, stop func()) {
	sv := serveLoopback(b, st.s, grpcReceiver)
	return sv.Addr, sv.stop
}

func (st *soakTarget) post(b *testing.B, body []byte, gz bool) int {
	req, _ := http.NewRequest(http.MethodPost, st.base+"/v1/metrics", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1 // counted by the caller; b.Fatal is not for other goroutines
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func mathFloat(s *series) float64 { return math.Float64frombits(s.bits.Load()) }

// report scrapes three times and reports the slowest, with RSS figures
// before and after.
func (st *soakTarget) report(b *testing.B) {
	b.ReportMetric(procKiB(b, "VmRSS")/1024, "rss_before_scrape_MiB")
	var slowest, cpu time.Duration
	for range 3 {
		c0 := cpuTime()
		t0 := time.Now()
		resp, err := http.Get(st.base + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("scrape: %d", resp.StatusCode)
		}
		slowest = max(slowest, time.Since(t0))
		cpu = max(cpu, cpuTime()-c0)
	}
	b.ReportMetric(procKiB(b, "VmHWM")/1024, "peak_rss_MiB")
	b.ReportMetric(procKiB(b, "VmRSS")/1024, "rss_MiB")
	b.ReportMetric(slowest.Seconds()*1000, "scrape_ms")
	b.ReportMetric(cpu.Seconds()*1000, "scrape_cpu_ms")
	b.ReportMetric(float64(st.s.st.nseries.Load()), "series")
	var overflow float64
	for _, r := range []string{OverflowSeries, OverflowMetrics, OverflowStreams} {
		overflow += testutil.ToFloat64(st.s.overflow.WithLabelValues(r))
	}
	b.ReportMetric(overflow, "dropped")
}

func BenchmarkSoak(b *testing.B) {
	// 1,100 OTLP histogram series and as many NDJSON ones, each with
	// samples at 1e-30 ms and 1e300 ms.
	b.Run("wide", func(b *testing.B) {
		for b.Loop() {
			st, stop := startSoak(b)
			for i := range 1100 {
				dp := &metricpb.HistogramDataPoint{Attributes: []*commonpb.KeyValue{strAttr("name", fmt.Sprint(i))},
					StartTimeUnixNano: 1, TimeUnixNano: 2, Count: 2, Sum: ptr(1e300),
					ExplicitBounds: []float64{1e-30, 1e300}, BucketCounts: []uint64{1, 0, 1}}
				body, _ := proto.Marshal(exportReq(nil, histMetric(cumul, dp)))
				st.post(b, body, false)
				st.s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: 1e-30, Tags: map[string]string{"name": fmt.Sprint("nd", i)}})
				st.s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: 1e300, Tags: map[string]string{"name": fmt.Sprint("nd", i)}})
			}
			st.report(b)
			stop()
		}
	})
	// 100,000 distinct metric names over NDJSON.
	b.Run("names", func(b *testing.B) {
		for b.Loop() {
			st, stop := startSoak(b)
			pr, pw := io.Pipe()
			go func() {
				w := bufio.NewWriter(pw)
				// bufio.Writer keeps its first error for Flush, which
				// closes the pipe with it.
				for i := range 100000 {
					_, _ = fmt.Fprintf(w, `{"type":"Metric","data":{"name":"custom_%d","type":"counter","contains":"default"},"metric":"custom_%d"}`+"\n", i, i)
					_, _ = fmt.Fprintf(w, `{"metric":"custom_%d","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{"testid":"t"}}}`+"\n", i)
				}
				_ = pw.CloseWithError(w.Flush()) // always nil
			}()
			if _, err := st.s.replayReader("names", pr); err != nil {
				b.Fatal(err)
			}
			st.report(b)
			stop()
		}
	})
	// 600,000 distinct resource attribute sets behind one series.
	b.Run("resources", func(b *testing.B) {
		for b.Loop() {
			st, stop := startSoak(b)
			postResources(b, st, 60)
			st.report(b)
			stop()
		}
	})
	// 800,000 distinct values of the name tag.
	b.Run("labels", func(b *testing.B) {
		for b.Loop() {
			st, stop := startSoak(b)
			pr, pw := io.Pipe()
			go func() {
				w := bufio.NewWriter(pw)
				// bufio.Writer keeps its first error for Flush, which
				// closes the pipe with it.
				for i := range 800000 {
					_, _ = fmt.Fprintf(w, `{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":%d,"tags":{"name":"https://example.test/item/%d","testid":"t"}}}`+"\n", i%5000, i)
				}
				_ = pw.CloseWithError(w.Flush()) // always nil
			}()
			if _, err := st.s.replayReader("labels", pr); err != nil {
				b.Fatal(err)
			}
			st.report(b)
			stop()
		}
	})
	// 50 parallel gzip bombs: 2 MB on the wire, 16 MiB decoded each.
	b.Run("bombs", func(b *testing.B) {
		var zipped bytes.Buffer
		gz, _ := gzip.NewWriterLevel(&zipped, gzip.BestCompression)
		// Zeros up to the body limit: decoded in full, then refused (400).
		_, _ = gz.Write(make([]byte, 16<<20-64)) // in memory, cannot fail
		_ = gz.Close()                           // in memory, cannot fail
		for b.Loop() {
			st, stop := startSoak(b)
			var wg sync.WaitGroup
			codes := make([]int, 50)
			for i := range 50 {
				wg.Go(func() { codes[i] = st.post(b, zipped.Bytes(), true) })
			}
			wg.Wait()
			busy := 0
			for _, c := range codes {
				if c == http.StatusServiceUnavailable {
					busy++
				}
			}
			b.ReportMetric(float64(busy), "refused_503")
			st.report(b)
			stop()
		}
	})
	// 50 parallel OTLP/gRPC calls, each a gzip message of about 16 KiB
	// that decodes to just under 16 MiB (one resource attribute of 'a's):
	// decompressed and decoded within the budget, or refused with
	// UNAVAILABLE. The frame is built once and sent over HTTP/2 as a gRPC
	// client sends it, so the peak is the exporter's, not 50 clients'
	// encoders.
	b.Run("grpcbombs", func(b *testing.B) {
		frame := grpcBombFrame()
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		client := &http.Client{Transport: &http.Transport{Protocols: p}}
		for b.Loop() {
			st, stop := startSoak(b)
			addr, cancel := st.serveGRPC(b)
			var wg sync.WaitGroup
			statuses := make([]string, 50)
			for i := range 50 {
				wg.Go(func() {
					req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", bytes.NewReader(frame))
					req.Header.Set("Content-Type", "application/grpc")
					req.Header.Set("Grpc-Encoding", "gzip")
					resp, err := client.Do(req)
					if err != nil {
						statuses[i] = err.Error()
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					statuses[i] = resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status")
				})
			}
			wg.Wait()
			busy, ok := 0, 0
			for _, c := range statuses {
				switch c {
				case "14": // UNAVAILABLE
					busy++
				case "0":
					ok++
				}
			}
			if busy+ok != len(statuses) {
				b.Fatalf("statuses %v: want only 0 (OK) and 14 (UNAVAILABLE)", statuses)
			}
			b.ReportMetric(float64(busy), "refused_unavailable")
			b.ReportMetric(float64(ok), "taken")
			st.report(b)
			cancel()
			stop()
		}
	})
	// 25,000 OTLP/gRPC calls that send a message's length prefix and one
	// byte, then stall, over about 100 HTTP/2 connections (250 streams
	// each). The calls come from a child process, so the peak is the
	// exporter's alone.
	b.Run("stalled", func(b *testing.B) {
		for b.Loop() {
			st, stop := startSoak(b)
			addr, cancel := st.serveGRPC(b)
			child := exec.Command(os.Args[0])
			child.Env = append(os.Environ(), "SOAK_STALL_ADDR="+addr, "SOAK_STALL_CALLS=25000")
			stdin, _ := child.StdinPipe()
			out := &bytes.Buffer{}
			child.Stdout, child.Stderr = out, out
			if err := child.Start(); err != nil {
				b.Fatal(err)
			}
			// The calls are in when the count of those refused for the
			// budget stops growing: every other one is held, stalled.
			busy := func() float64 { return testutil.ToFloat64(st.s.otlpReqs.WithLabelValues(otlp.OutcomeBusy)) }
			last := -1.0
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
				now := busy()
				if now == last && now > 0 {
					break
				}
				last = now
			}
			b.ReportMetric(25000-busy(), "calls_held")
			b.ReportMetric(busy(), "refused_unavailable")
			st.report(b)
			_ = stdin.Close() // the helper exits when its stdin closes
			_ = child.Wait()
			cancel()
			stop()
		}
	})
	// 1,000 sequential runs with distinct testids, 20 simulated minutes
	// apart, expiring as the TTL passes: memory plateaus, the last run is
	// complete and nothing is dropped.
	b.Run("runs", func(b *testing.B) {
		for b.Loop() {
			st, stop := startSoak(b)
			t0 := time.Now()
			var rssAt100 float64
			for r := range 1000 {
				now := t0.Add(time.Duration(r) * 20 * time.Minute)
				st.s.st.clock.Store(now.UnixNano())
				st.s.ExpireRuns(now)
				id := fmt.Sprintf("run-%04d", r)
				for i := range 2000 {
					tags := map[string]string{"testid": id, "name": fmt.Sprint("endpoint-", i%20), "status": "200", "method": "GET"}
					st.s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: tags})
					st.s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: float64(5 + i%400), Tags: tags})
				}
				if r == 99 {
					rssAt100 = procKiB(b, "VmRSS") / 1024
				}
			}
			f, _ := st.s.st.lookup("http_reqs")
			total := 0.0
			for _, s := range f.snapshot() {
				if s.run.testid != "run-0999" {
					b.Fatalf("series of %s still held", s.run.testid)
				}
				total += mathFloat(s)
			}
			if total != 2000 {
				b.Fatalf("last run holds %v requests, want 2000", total)
			}
			b.ReportMetric(rssAt100, "rss_at_run100_MiB")
			st.report(b)
			stop()
		}
	})
}

// grpcBombFrame is one gRPC message frame, gzip-compressed, of an export
// request that decodes to just under 16 MiB.
func grpcBombFrame() []byte {
	msg, _ := proto.Marshal(exportReq([]*commonpb.KeyValue{strAttr("host", strings.Repeat("a", 16<<20-1024))},
		sumMetric("k6_http_reqs", cumul, dbl(1, 1))))
	var zipped bytes.Buffer
	gz := gzip.NewWriter(&zipped)
	_, _ = gz.Write(msg) // in memory, cannot fail
	_ = gz.Close()       // in memory, cannot fail
	frame := append([]byte{1, 0, 0, 0, 0}, zipped.Bytes()...)
	binary.BigEndian.PutUint32(frame[1:5], uint32(zipped.Len()))
	return frame
}

// TestMain runs the test binary as the attacker of BenchmarkSoak/stalled
// when SOAK_STALL_ADDR is set, and as the tests otherwise, with
// Prometheus and promtool built before the tests' timer starts.
func TestMain(m *testing.M) {
	if addr := os.Getenv("SOAK_STALL_ADDR"); addr != "" {
		n, _ := strconv.Atoi(os.Getenv("SOAK_STALL_CALLS"))
		stalledCalls(addr, n)
		os.Exit(0)
	}
	os.Exit(promtest.Main(m, "prometheus", "promtool"))
}

// stalledCalls starts n gRPC calls to addr that stall after one byte of
// their message, and holds them until stdin closes.
func stalledCalls(addr string, n int) {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: p}}
	var writers []*io.PipeWriter
	for range n {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", pr)
		req.Header.Set("Content-Type", "application/grpc")
		go func() {
			if resp, err := client.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}()
		go func() { _, _ = pw.Write([]byte{0, 0, 0, 4, 0, 1}) }() // a 1 KiB message's prefix and one byte
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, pw := range writers {
		_ = pw.Close()
	}
}

// postResources posts batches of 10,000 OTLP resources, each with its
// own host attribute and one cumulative counter of the same name: as
// many distinct resource attribute sets behind one series.
func postResources(b *testing.B, st *soakTarget, batches int) {
	b.Helper()
	for batch := range batches {
		req := &colmetricpb.ExportMetricsServiceRequest{}
		for i := range 10000 {
			req.ResourceMetrics = append(req.ResourceMetrics, &metricpb.ResourceMetrics{
				Resource:     &resourcepb.Resource{Attributes: []*commonpb.KeyValue{strAttr("host", fmt.Sprint(batch*10000+i))}},
				ScopeMetrics: []*metricpb.ScopeMetrics{{Metrics: []*metricpb.Metric{sumMetric("k6_http_reqs", cumul, dbl(1, 1))}}},
			})
		}
		body, _ := proto.Marshal(req)
		st.post(b, body, false)
	}
}
