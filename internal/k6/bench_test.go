package k6

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/testenv"
)

// The large benchmark file repeats runA's Point lines with times shifted
// by one run length per copy, so it looks like one long run. It is made in
// a temporary folder on first use and removed by TestMain.
var (
	bigOnce  sync.Once
	bigDir   string
	bigKeep  string
	bigPaths = map[int]string{}
	bigMu    sync.Mutex
	bigLines = map[int]int{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if bigDir != "" {
		_ = os.RemoveAll(bigDir) // best-effort cleanup of generated inputs
	}
	os.Exit(code)
}

// bigNDJSON returns a file of about copies × 1,987 lines.
func bigNDJSON(tb testing.TB, copies int) (string, int) {
	tb.Helper()
	bigOnce.Do(func() {
		// K6_BENCH_DIR keeps the files between runs (profiling).
		if d := os.Getenv("K6_BENCH_DIR"); d != "" {
			bigKeep = d
			return
		}
		d, err := os.MkdirTemp("", "k6bench-")
		if err != nil {
			tb.Fatal(err)
		}
		bigDir = d
	})
	bigMu.Lock()
	defer bigMu.Unlock()
	if p, ok := bigPaths[copies]; ok {
		return p, bigLines[copies]
	}
	dir := bigDir
	if bigKeep != "" {
		dir = bigKeep
		p := filepath.Join(dir, fmt.Sprintf("big-%d.ndjson", copies))
		if data, err := os.ReadFile(p + ".lines"); err == nil {
			var n int
			if _, err := fmt.Sscan(string(data), &n); err == nil {
				bigPaths[copies], bigLines[copies] = p, n
				return p, n
			}
		}
	}
	src, err := os.ReadFile(fixtures.Path(tb, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	if err != nil {
		tb.Fatal(err)
	}
	var metricLines, points [][]byte
	var times []time.Time
	for line := range bytes.Lines(src) {
		var p Point
		isPoint, _, err := ParseNDJSONLine(line, &p)
		if err != nil {
			tb.Fatal(err)
		}
		if !isPoint {
			metricLines = append(metricLines, line)
			continue
		}
		points = append(points, line)
		times = append(times, p.Time)
	}
	path := filepath.Join(dir, fmt.Sprintf("big-%d.ndjson", copies))
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	// bufio.Writer keeps its first error, which Flush below reports.
	n := 0
	for _, l := range metricLines {
		_, _ = w.Write(l)
		n++
	}
	const span = 7 * time.Second
	for c := range copies {
		shift := time.Duration(c) * span
		for i, l := range points {
			old := times[i].UTC().Format(time.RFC3339Nano)
			neu := times[i].Add(shift).UTC().Format(time.RFC3339Nano)
			_, _ = w.Write(bytes.Replace(l, []byte(old), []byte(neu), 1))
			n++
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	if bigKeep != "" {
		if err := os.WriteFile(path+".lines", fmt.Appendf(nil, "%d", n), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	bigPaths[copies] = path
	bigLines[copies] = n
	return path, n
}

// BenchmarkSummarizeNDJSON is `envelope summarize` end to end (load, all
// metrics, exact mode, JSON out) on a ~2M-line plain NDJSON file.
func BenchmarkSummarizeNDJSON(b *testing.B) {
	path, lines := bigNDJSON(b, 1000)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		r, err := Load(path, LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteJSON(io.Discard, []*Run{r}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	// CPU seconds are what the shared machine cannot steal: lines per CPU
	// second, and the CPU used per wall second (2 = both cores busy).
	cpu := (cpuTime() - cpu0).Seconds()
	b.ReportMetric(float64(lines)*float64(b.N)/cpu, "lines/cpu-s")
	b.ReportMetric(cpu/b.Elapsed().Seconds(), "cores")
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // RUSAGE_SELF with a valid pointer cannot fail
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkJQP95 runs jq computing only the p95 of http_req_duration on the
// same file, for the side-by-side figure in docs/benchmarks.md.
func BenchmarkJQP95(b *testing.B) {
	if _, err := exec.LookPath("jq"); err != nil {
		testenv.Missing(b, "jq", "install Debian's jq package for this side-by-side figure")
	}
	path, lines := bigNDJSON(b, 1000)
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command("jq", "-n", `[inputs | select(.type == "Point" and .metric == "http_req_duration") | .data.value] | sort | .[((length - 1) * 0.95 | floor)]`, path)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("jq: %v: %s", err, out)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkParseNDJSONLine is the live exporter's per-line call.
func BenchmarkParseNDJSONLine(b *testing.B) {
	line := []byte(`{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-30T08:51:04.034267023Z","value":1.526667,"tags":{"expected_response":"true","group":"::home page","method":"GET","name":"home","proto":"HTTP/1.0","scenario":"arrival","scenario_kind":"open","status":"200","url":"home"}}}`)
	var p Point
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseNDJSONLine(line, &p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemory shows what trend statistics hold: about 8 bytes per
// sample in exact mode (10 with sub-metrics' class ids), and in sketch mode
// a size that does not grow with the run's length (compare held-B at the
// two lengths).
func BenchmarkMemory(b *testing.B) {
	for _, mode := range []Mode{ModeExact, ModeSketch} {
		for _, copies := range []int{50, 400} {
			b.Run(fmt.Sprintf("mode=%s/copies=%d", mode, copies), func(b *testing.B) {
				path, _ := bigNDJSON(b, copies)
				var r *Run
				for b.Loop() {
					var err error
					if r, err = Load(path, LoadOptions{Mode: mode}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(r.TrendSamples), "trend-samples")
				b.ReportMetric(float64(r.HeldBytes), "held-B")
				b.ReportMetric(float64(r.HeldBytes)/float64(r.TrendSamples), "B/sample")
			})
		}
	}
}

// BenchmarkIntervalMemory is what the intervals' batches over time add
// to a load: every trend class's time bins (at most IntervalBins
// sketches each, TimelineBins for http_req_duration's), against the
// same load without intervals. held-B does not grow with the run's
// length in sketch mode (compare the two lengths).
func BenchmarkIntervalMemory(b *testing.B) {
	for _, mode := range []Mode{ModeExact, ModeSketch} {
		for _, copies := range []int{50, 400} {
			for _, conf := range []float64{0, 0.95} {
				b.Run(fmt.Sprintf("mode=%s/copies=%d/intervals=%v", mode, copies, conf > 0), func(b *testing.B) {
					path, _ := bigNDJSON(b, copies)
					opts := LoadOptions{Mode: mode, Stats: append(DefaultStats(), "p(99)"), IntervalConfidence: conf, Timeline: true}
					var r *Run
					b.ReportAllocs()
					for b.Loop() {
						var err error
						if r, err = Load(path, opts); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(r.HeldBytes), "held-B")
				})
			}
		}
	}
}
