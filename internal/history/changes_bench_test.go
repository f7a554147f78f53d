package history

import (
	"context"
	"testing"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/envelope"
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
		s, err := Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		an, err := s.Analyze(ctx, Line{Test: "bench"}, changepoint.Config{})
		if err != nil || len(an.Runs) != 10000 {
			b.Fatalf("%v", err)
		}
		var tol *envelope.Tolerance
		if drift {
			t := envelope.DefaultTolerance()
			tol = &t
		}
		if _, err := an.Report(ctx, s, 1, tol, false); err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
	}
}
