package backtest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/simulate"
)

// BenchmarkAcceptance re-runs the acceptance runs of docs/rules.md (the
// demo envelope's rules; baseline seeds 11, 12, 101–110 and 1–10,
// auth_register ×1.15 seed 13, 1% errors seed 14, throughput ×0.9 seeds
// 15 and 101–110) with the run-to-run variance of real runs
// (simulate.RealVariance) on top of sampling, and logs each run's alerts
// and first firings:
//
//	go test ./internal/backtest/ -run '^$' -bench Acceptance -benchtime 1x -v
func BenchmarkAcceptance(b *testing.B) {
	env, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	files := rulesFor(b, env)
	type acc struct {
		name string
		o    simulate.Options
	}
	var runs []acc
	add := func(what string, o simulate.Options, seeds ...uint64) {
		for _, s := range seeds {
			o.Seed = s
			runs = append(runs, acc{fmt.Sprintf("%s, seed %d", what, s), o})
		}
	}
	add("baseline", simulate.Options{}, 11, 12)
	add("auth_register latency ×1.15", simulate.Options{LatencyFactor: map[string]float64{"auth_register": 1.15}}, 13)
	add("1% failed requests", simulate.Options{ErrorRate: 0.01}, 14)
	add("throughput ×0.9", simulate.Options{ThroughputFactor: 0.9}, 15)
	add("baseline", simulate.Options{}, seedRange(101, 10)...)
	add("throughput ×0.9", simulate.Options{ThroughputFactor: 0.9}, seedRange(101, 10)...)
	add("baseline", simulate.Options{}, seedRange(1, 10)...)
	path := filepath.Join(b.TempDir(), "run.ndjson")
	for b.Loop() {
		var lines []string
		for _, a := range runs {
			o := a.o
			o.Duration, o.Variance = runLength, simulate.RealVariance()
			if err := simulate.WriteFile(path, env, o); err != nil {
				b.Fatal(err)
			}
			r, err := File(context.Background(), env, files, path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			var fired []string
			seen := map[string]bool{}
			for _, al := range r.Alerts {
				if k := alertKey(al); !seen[k] {
					seen[k] = true
					fired = append(fired, fmt.Sprintf("%s %gs", k, al.FirstFiringS))
				}
			}
			lines = append(lines, fmt.Sprintf("| %s | %s |", a.name, strings.Join(fired, ", ")))
		}
		b.Logf("\n%s", strings.Join(lines, "\n"))
	}
}
