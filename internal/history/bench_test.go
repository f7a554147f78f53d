package history

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the CPU time per operation since start: on a shared,
// loaded machine wall time mostly measures the wait for a core.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
}

// benchNDJSON is the point file the NDJSON benchmarks read: a fixture
// run, or the file HISTORY_BENCH_NDJSON names (a 6-minute run).
func benchNDJSON(b *testing.B) string {
	if p := os.Getenv("HISTORY_BENCH_NDJSON"); p != "" {
		return p
	}
	return fixtures.Path(b, "k6/history-v2.2.0/run-01.ndjson.gz")
}

// recordOnce is `history record FILE` minus process start: open the
// history, read the run as baseline does, compute its figures, record
// it, close. hash makes each iteration's run new.
func recordOnce(b *testing.B, dsn, path, hash string) {
	ctx := context.Background()
	s, err := runstore.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	in, err := figures.ReadFiles([]string{path}, figures.LoadOptions(0, ""))
	if err != nil {
		b.Fatal(err)
	}
	rec, err := runstore.FromRun(in[0], runstore.Meta{Test: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	rec.SHA256 += hash
	if _, err := s.Add(ctx, []runstore.Record{rec}); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRecordSummary records one summary export into an SQLite file.
func BenchmarkRecordSummary(b *testing.B) {
	dsn := filepath.Join(b.TempDir(), "history.db")
	path := fixtures.Path(b, "k6/history-v2.2.0/run-01.summary.json")
	i := 0
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		i++
		recordOnce(b, dsn, path, fmt.Sprint(i))
	}
}

// BenchmarkRecordNDJSON records one NDJSON.gz run; BenchmarkBaselineNDJSON
// is baseline's work on the same file (read, compute the envelope), for
// the ratio.
func BenchmarkRecordNDJSON(b *testing.B) {
	dsn := filepath.Join(b.TempDir(), "history.db")
	path := benchNDJSON(b)
	i := 0
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		i++
		recordOnce(b, dsn, path, fmt.Sprint(i))
	}
}

// BenchmarkBaselineNDJSON is baseline on the file BenchmarkRecordNDJSON
// records, minus process start: read, compute, write the envelope file.
func BenchmarkBaselineNDJSON(b *testing.B) {
	path := benchNDJSON(b)
	out := filepath.Join(b.TempDir(), "envelope.yaml")
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		in, err := figures.ReadFiles([]string{path}, figures.LoadOptions(0, ""))
		if err != nil {
			b.Fatal(err)
		}
		env, err := envelope.Compute(in, envelope.Options{Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if err := envelope.WriteFile(out, env, envelope.YAML); err != nil {
			b.Fatal(err)
		}
	}
}

var (
	bigOnce sync.Once
	bigDSN  string
	bigErr  error
)

// bigHistory is an SQLite history of 10,000 runs, each with the
// figures of a real run (its values scaled a little per run), made once
// per test binary.
func bigHistory(b *testing.B) string {
	bigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "history-bench-")
		if err != nil {
			bigErr = err
			return
		}
		bigDSN = filepath.Join(dir, "history.db")
		in, err := figures.ReadFiles([]string{fixtures.Path(b, "k6/history-v2.2.0/run-01.ndjson.gz")}, figures.LoadOptions(0, ""))
		if err != nil {
			bigErr = err
			return
		}
		rec, err := runstore.FromRun(in[0], runstore.Meta{Test: "bench"})
		if err != nil {
			bigErr = err
			return
		}
		s, err := runstore.Open(context.Background(), bigDSN)
		if err != nil {
			bigErr = err
			return
		}
		defer s.Close() //nolint:errcheck // benchmark set-up
		t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		recs := make([]runstore.Record, 0, 10000)
		for i := range 10000 {
			r := rec
			r.SHA256 = fmt.Sprintf("%s-%d", rec.SHA256, i)
			r.TestID, r.Commit, r.CommitTime = fmt.Sprintf("run-%d", i), fmt.Sprintf("c%05d", i), t0.Add(time.Duration(i)*time.Hour)
			r.Figures = append([]figures.KeyValue(nil), rec.Figures...)
			for j := range r.Figures {
				r.Figures[j].X *= 1 + float64(i%17)/100
			}
			recs = append(recs, r)
		}
		_, bigErr = s.Add(context.Background(), recs)
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigDSN
}

// BenchmarkShow10000 is `history show --figure auth_login.p95 --format
// json` over 10,000 runs minus process start: open, read the series,
// write it, close.
func BenchmarkShow10000(b *testing.B) {
	dsn := bigHistory(b)
	ctx := context.Background()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		s, err := runstore.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		pts, err := s.Series(ctx, runstore.Line{Test: "bench", WithExcluded: true}, figures.Key{Endpoint: "auth_login", Figure: figures.P95})
		if err != nil || len(pts) != 10000 {
			b.Fatalf("%d points, %v", len(pts), err)
		}
		if err := (SeriesView{Test: "bench", Endpoint: "auth_login", Figure: figures.P95, Points: pts}).Write(io.Discard, "json"); err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
	}
}
