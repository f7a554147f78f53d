package backtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// BenchmarkRealRun backtests one real 6-minute k6 run (about 280 000
// NDJSON lines) against the demo envelope's rules: read, store, evaluate.
func BenchmarkRealRun(b *testing.B) {
	env, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	files, err := RuleFiles(filepath.Join("..", "..", "rules"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := File(context.Background(), env, files, fixtures.Path(b, "k6/baseline-mix-v2.2.0/baseline-c.ndjson.gz"), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
