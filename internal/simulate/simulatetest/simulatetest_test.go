package simulatetest

import (
	"math"
	"testing"

	"github.com/envelope-dev/envelope/internal/simulate"
)

// A step applies from its run on, multiplying earlier factors; seeds
// follow the run index.
func TestSequenceSteps(t *testing.T) {
	base := simulate.Options{Seed: 10, LatencyFactor: map[string]float64{"auth_login": 1.1}, Variance: simulate.RealVariance()}
	runs := Sequence(base, 5, Step{At: 2, LatencyFactor: map[string]float64{"auth_login": 1.2, "*": 1.5}}, Step{At: 4, ThroughputFactor: 0.9, ErrorRate: 0.01})
	for i, o := range runs {
		if o.Seed != 10+uint64(i) || o.Variance != simulate.RealVariance() {
			t.Errorf("run %d: seed %d variance %+v", i, o.Seed, o.Variance)
		}
		login, all := o.LatencyFactor["auth_login"], o.LatencyFactor["*"]
		switch {
		case i < 2 && (math.Abs(login-1.1) > 1e-12 || all != 0):
			t.Errorf("run %d before the step: %v", i, o.LatencyFactor)
		case i >= 2 && (math.Abs(login-1.32) > 1e-12 || all != 1.5):
			t.Errorf("run %d after the step: %v", i, o.LatencyFactor)
		}
		if (i == 4) != (o.ThroughputFactor == 0.9 && o.ErrorRate == 0.01) {
			t.Errorf("run %d: throughput %g errors %g", i, o.ThroughputFactor, o.ErrorRate)
		}
	}
	if base.LatencyFactor["auth_login"] != 1.1 {
		t.Error("Sequence changed the base options")
	}
	// A step with an end: run 2 alone (a one-off slow run), and two
	// lasting steps of ×1.01 compounding.
	runs = Sequence(simulate.Options{}, 5, Step{At: 2, Until: 3, LatencyFactor: map[string]float64{"actor_get": 1.6}},
		Step{At: 3, LatencyFactor: map[string]float64{"auth_login": 1.01}}, Step{At: 4, LatencyFactor: map[string]float64{"auth_login": 1.01}})
	for i, o := range runs {
		actor, login := o.LatencyFactor["actor_get"], o.LatencyFactor["auth_login"]
		wantActor, wantLogin := map[int]float64{2: 1.6}[i], map[int]float64{3: 1.01, 4: 1.0201}[i]
		if math.Abs(actor-wantActor) > 1e-12 || math.Abs(login-wantLogin) > 1e-12 {
			t.Errorf("run %d: %v, want actor_get %g auth_login %g", i, o.LatencyFactor, wantActor, wantLogin)
		}
	}
}
