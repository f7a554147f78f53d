package compare

import (
	"math"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

// TestLatencyPlans checks the runs plan against the spread it is given:
// the SD of the runs' logs, the run-level part where intervals are
// known, intervals and MDC that shrink with more runs, and the fewest
// runs whose MDC is within the tolerance.
func TestLatencyPlans(t *testing.T) {
	logs := []float64{-0.04, -0.02, 0, 0.02, 0.04} // SD 0.0316
	env := &envelope.Envelope{Tolerance: figures.Tolerance{LatencyRise: 0.10, Confidence: 0.95}}
	for _, l := range logs {
		p95 := 400 * math.Exp(l)
		// A 95% interval of ±1.96·0.01 on the log scale: sampling SD 1%.
		ci := &figures.Interval{Low: p95 * math.Exp(-1.96*0.01), High: p95 * math.Exp(1.96*0.01)}
		env.Runs = append(env.Runs, envelope.Run{Run: figures.Run{Median: 100 * math.Exp(l/2), P95: p95, P95CI: ci}})
	}
	plans := LatencyPlans(env, 3)
	if len(plans) != 2 || plans[0].Figure != "median" || plans[1].Figure != "p95" {
		t.Fatalf("plans %+v, want median and p95 (no p99 values)", plans)
	}
	med, p95 := plans[0], plans[1]
	sd := math.Sqrt(0.004 / 4)
	if math.Abs(p95.SD-sd) > 1e-12 || math.Abs(med.SD-sd/2) > 1e-12 {
		t.Errorf("SD %v and %v, want %v and %v", p95.SD, med.SD, sd, sd/2)
	}
	if want := math.Sqrt(sd*sd - 0.0001); math.Abs(p95.RunLevelSD-want) > 1e-6 {
		t.Errorf("p95 run-level SD %v, want %v", p95.RunLevelSD, want)
	}
	if !math.IsNaN(med.RunLevelSD) {
		t.Errorf("median run-level SD %v without intervals, want NaN", med.RunLevelSD)
	}
	if len(p95.Rows) != len(planRuns) {
		t.Fatalf("%d rows, want %d", len(p95.Rows), len(planRuns))
	}
	for i := 1; i < len(p95.Rows); i++ {
		if p95.Rows[i].MDC >= p95.Rows[i-1].MDC || p95.Rows[i].LevelHalfWidth >= p95.Rows[i-1].LevelHalfWidth {
			t.Errorf("row %d %+v does not tighten from %+v", i, p95.Rows[i], p95.Rows[i-1])
		}
	}
	// 3 later runs: MDC = (t + t0.8)·SD·√(1/n + 1/3) falls under 10% at
	// some n; the one before must still exceed it.
	n := p95.Needed
	if n < PlanMinRuns || planRow(p95.SD, n, 3, 0.95).MDC > 0.10 || (n > PlanMinRuns && planRow(p95.SD, n-1, 3, 0.95).MDC <= 0.10) {
		t.Errorf("needed %d runs: MDC %v there", n, planRow(p95.SD, n, 3, 0.95).MDC)
	}
	// A spread too wide for any baseline size: 0.
	wide := LatencyPlans(&envelope.Envelope{Runs: []envelope.Run{{Run: figures.Run{Median: 100}}, {Run: figures.Run{Median: 160}}, {Run: figures.Run{Median: 70}}}}, 3)
	if len(wide) != 1 || wide[0].Needed != 0 {
		t.Errorf("wide spread: %+v, want no baseline size within the tolerance", wide)
	}
}
