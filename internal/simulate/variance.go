package simulate

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Variance is the run-to-run variation real runs show beyond their own
// sampling: deployments, task placement and neighbours move a whole run.
// Each field is the standard deviation of the natural log of a factor
// drawn once per run, log-normal with median 1.
type Variance struct {
	// Latency multiplies every endpoint's latencies together: the run's
	// aggregate latency level.
	Latency float64 `json:"latency"`
	// Endpoint multiplies one endpoint's latencies, drawn per endpoint on
	// top of Latency: how far endpoints move independently of each other.
	Endpoint float64 `json:"endpoint"`
	// Throughput multiplies the request and iteration rates.
	Throughput float64 `json:"throughput"`
}

// RealVariance is the run-level variance estimated from the real k6 runs
// kept as fixtures (the 30-run history and the three 6-minute baselines),
// by the method of moments; docs/rules.md gives the estimates, the method
// and the test that recomputes them. The judges' power tests draw every run
// with it. A function, so that no caller can change it for the others.
func RealVariance() Variance {
	return Variance{Latency: 0.036, Endpoint: 0.013, Throughput: 0}
}

// IsZero says whether v adds nothing to sampling.
func (v Variance) IsZero() bool { return v == Variance{} }

// Effect is one run's drawn factors.
type Effect struct {
	Latency    float64
	Endpoints  map[string]float64 // own factor of each endpoint, by key
	Throughput float64
}

// effectStream keeps the run-level draws apart from the sampling stream
// seeded by the same seed, so a run without variance keeps its bytes.
const effectStream = 0x72756e6c6576656c

// Draw is the effect of the run with this seed, for endpoints keys (the
// draw order is the sorted keys, so the same seed gives the same run).
func (v Variance) Draw(seed uint64, keys []string) Effect {
	rng := rand.New(rand.NewPCG(seed, effectStream))
	ks := append([]string(nil), keys...)
	sort.Strings(ks)
	e := Effect{Latency: math.Exp(v.Latency * rng.NormFloat64()), Throughput: math.Exp(v.Throughput * rng.NormFloat64()), Endpoints: map[string]float64{}}
	for _, k := range ks {
		e.Endpoints[k] = math.Exp(v.Endpoint * rng.NormFloat64())
	}
	return e
}
