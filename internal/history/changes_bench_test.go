package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// BenchmarkChanges10000 is `history changes` over 10,000 runs of 29
// series, minus process start: open, read every series of the line,
// analyse from scratch, join the stored lifecycle, each series' drift,
// close. BenchmarkRecordChanges10000 is what `history record` adds after
// storing a run: the same without the drift.
func BenchmarkChanges10000(b *testing.B) { benchChanges(b, true) }

func BenchmarkRecordChanges10000(b *testing.B) { benchChanges(b, false) }
func benchChanges(b *testing.B, drift bool) {
	dsn := bigHistory(b)
	ctx := context.Background()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		s, err := runstore.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		an, err := Analyze(ctx, s, runstore.Line{Test: "bench"}, changepoint.Config{})
		if err != nil || len(an.Runs) != 10000 {
			b.Fatalf("%v", err)
		}
		var tol *figures.Tolerance
		if drift {
			t := figures.DefaultTolerance()
			tol = &t
		}
		stored, err := s.StoredChanges(ctx, an.Test)
		if err != nil {
			b.Fatal(err)
		}
		an.Report(stored, 1, tol)
		_ = s.Close()
	}
}

// BenchmarkRecordAppended10000 is what `history record` does with one new
// run of a 10,000-run history of 29 series, minus process start and
// reading the k6 file: open the history, store the run's figures,
// restore the line's analysis checkpoint, append the run, analyse, join
// the stored lifecycle, compare with the checkpoint's result (what the
// run changed: PreviewChanges), store the next checkpoint, close. The
// history is a copy of BenchmarkChanges10000's with its checkpoint
// stored once.
func BenchmarkRecordAppended10000(b *testing.B) {
	dsn := filepath.Join(b.TempDir(), "history.db")
	src, err := os.ReadFile(bigHistory(b))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dsn, src, 0o600); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, err := runstore.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := PreviewChanges(ctx, s, runstore.Line{Test: "bench"}, nil); err != nil {
		b.Fatal(err)
	}
	_ = s.Close()
	in, err := figures.ReadFiles([]string{fixtures.Path(b, "k6/history-v2.2.0/run-01.ndjson.gz")}, figures.LoadOptions(0, ""))
	if err != nil {
		b.Fatal(err)
	}
	next, err := runstore.FromRun(in[0], runstore.Meta{Test: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(10000 * time.Hour)
	i := 0
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		i++
		s, err := runstore.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		r := next
		r.TestID, r.SHA256, r.Commit = fmt.Sprintf("next-%d", i), fmt.Sprintf("next-%d", i), fmt.Sprintf("n%05d", i)
		r.CommitTime = t0.Add(time.Duration(i) * time.Hour)
		added, err := s.Add(ctx, []runstore.Record{r})
		if err != nil {
			b.Fatal(err)
		}
		rc, err := PreviewChanges(ctx, s, runstore.Line{Test: "bench"}, []int64{added[0].ID})
		if err != nil || rc.Runs != 10000+i {
			b.Fatalf("%d runs, %v", rc.Runs, err)
		}
		_ = s.Close()
	}
}
