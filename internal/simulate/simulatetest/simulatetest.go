// Package simulatetest holds what the tests of several packages share to
// draw histories of simulated runs: the options of consecutive runs with
// lasting or passing changes. Only tests import it.
package simulatetest

import (
	"fmt"
	"math"

	"github.com/envelope-dev/envelope/internal/simulate"
)

// Step is a lasting change from run At (0-based) of a sequence on: its
// factors multiply into every later run's, as a release that slows an
// endpoint or a deployment that lowers throughput would. With Until set
// it ends before run Until: a one-off slow run (Until = At+1), or a
// state the service enters and leaves.
type Step struct {
	At, Until        int                // Until 0: lasting
	LatencyFactor    map[string]float64 // "*" = every endpoint
	ThroughputFactor float64            // 0 = unchanged
	ErrorRate        float64            // added to the runs' error rate
}

// Sequence is the options of n consecutive runs made like base, run i
// seeded base.Seed+i (so each draws its own run-level effect when
// base.Variance is set), with every step whose At ≤ i applied: the runs
// a run history or a change-point test judges, or a baseline followed by
// candidates. A step's factor for an endpoint multiplies base's and any
// earlier step's, so steps of ×1.01 at runs k, k+1, … are a drift of 1%
// a run.
func Sequence(base simulate.Options, n int, steps ...Step) []simulate.Options {
	out := make([]simulate.Options, n)
	for i := range out {
		o := base
		o.Seed = base.Seed + uint64(i)
		o.LatencyFactor = map[string]float64{}
		for k, f := range base.LatencyFactor {
			o.LatencyFactor[k] = f
		}
		for _, s := range steps {
			if s.At > i || s.Until > 0 && i >= s.Until {
				continue
			}
			for k, f := range s.LatencyFactor {
				if old, ok := o.LatencyFactor[k]; ok {
					f *= old
				}
				o.LatencyFactor[k] = f
			}
			if s.ThroughputFactor > 0 {
				if o.ThroughputFactor == 0 {
					o.ThroughputFactor = 1
				}
				o.ThroughputFactor *= s.ThroughputFactor
			}
			o.ErrorRate = math.Min(1, o.ErrorRate+s.ErrorRate)
		}
		if o.TestID == "" {
			o.TestID = fmt.Sprintf("run-%02d", i+1)
		} else {
			o.TestID = fmt.Sprintf("%s-%02d", base.TestID, i+1)
		}
		out[i] = o
	}
	return out
}
