package simulate

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Variance is the variation real runs show beyond independent sampling
// of requests: deployments, task placement and neighbours move a whole
// run (Latency, Endpoint, Throughput: each the standard deviation of the
// natural log of a factor drawn once per run, log-normal with median 1),
// and within a run slow requests come together, requests arrive as a
// closed loop sends them and the run ends in a graceful stop (Burst,
// Arrivals, Drain).
type Variance struct {
	// Latency multiplies every endpoint's latencies together: the run's
	// aggregate latency level.
	Latency float64 `json:"latency"`
	// Endpoint multiplies one endpoint's latencies, drawn per endpoint on
	// top of Latency: how far endpoints move independently of each other.
	Endpoint float64 `json:"endpoint"`
	// Throughput multiplies the request and iteration rates.
	Throughput float64 `json:"throughput"`
	// Burst clusters the slow requests of a run in time.
	Burst Burst `json:"burst"`
	// Arrivals is how regularly requests arrive: the gap between two
	// requests is the sum of this many exponential gaps (an Erlang gap),
	// so a run's request count varies by 1/Arrivals of a Poisson count's
	// variance, as the closed loop of a fixed number of virtual users
	// keeps it. 0 or 1 is a Poisson stream.
	Arrivals int `json:"arrivals"`
	// Drain is the time at the end of a run, in seconds, in which no
	// request starts: the graceful stop, in which a k6 run only finishes
	// the iterations under way. The rate before it is raised so the run
	// keeps its mean request rate.
	Drain float64 `json:"drain"`
}

// RealVariance is the run-level variance estimated from the real k6 runs
// kept as fixtures (the 30-run history and the three 6-minute baselines),
// by the method of moments; docs/rules.md gives the estimates, the method
// and the test that recomputes them. The judges' power tests draw every run
// with it. A function, so that no caller can change it for the others.
func RealVariance() Variance {
	return Variance{Latency: 0.036, Endpoint: 0.013, Throughput: 0}
}

// ClusteredVariance is the noise model of real runs with their within-run
// structure: slow requests that come together in stretches (Burst),
// requests that arrive as regularly as a closed loop of virtual users
// sends them (Arrivals), the graceful stop at a run's end (Drain), and
// run-level factors on top. Its parameters are calibrated (a grid over
// them) on the history fixture's runs, grouped by constant settings with
// run 20 left out, against the model fitted to its clean runs 01–10, so
// that every series a run supports (throughput, and the aggregate's and
// each endpoint's median, p95 and p99) spreads from run to run and
// between the halves of one run within ±40% of the real runs;
// TestClusteredFidelity checks it series by series. Its run-level
// factors are smaller than RealVariance's, which were estimated as if
// requests were independent: the stretches carry part of that spread.
func ClusteredVariance() Variance {
	return Variance{
		Latency: 0.022, Endpoint: 0.022,
		Burst:    Burst{Share: 0.1, Length: 2, Hit: 0.3, Delay: 22},
		Arrivals: 3, Drain: 2.2,
	}
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

// Burst is how a run's slow requests come together: the service
// switches, for stretches of time, between a calm state and a slow one
// (a two-state Markov process in time, drawn per run), as a pause, a cold
// cache or a noisy neighbour does. In a slow stretch a share Hit of the
// requests wait an extra delay, exponential with mean Delay ms, before
// their own latency; both are then scaled by the endpoint's factors. A
// delay of tens of ms is a fast endpoint's whole tail and nothing to a
// slow endpoint's, and it leaves the medians nearly alone, so the
// stretches move a fast endpoint's p95 and p99 between the halves of one
// run as much as between runs, as real runs show. The zero Burst draws
// none.
type Burst struct {
	// Share is the long-run share of time the service is slow.
	Share float64 `json:"share"`
	// Length is the mean length of a slow stretch, in seconds.
	Length float64 `json:"length"`
	// Hit is the share of requests in a slow stretch that are delayed.
	Hit float64 `json:"hit"`
	// Delay is the mean extra delay of a delayed request, in ms.
	Delay float64 `json:"delay"`
}

// burstStream keeps the burst draws apart from the sampling and
// run-level streams of the same seed.
const burstStream = 0x6275727374730a0a

// on says whether b draws stretches at all.
func (b Burst) on() bool {
	return b.Share > 0 && b.Share < 1 && b.Length > 0 && b.Hit > 0 && b.Delay > 0
}

// bursts is one run's slow stretches, as sorted [start, end) pairs in
// seconds, and the stream the requests' extra delays are drawn from.
type bursts struct {
	slow       [][2]float64
	hit, delay float64
	rng        *rand.Rand
}

// draw draws the slow stretches of a run of secs seconds from the seed,
// starting in the stationary state; nil when b is off.
func (b Burst) draw(seed uint64, secs float64) *bursts {
	if !b.on() {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, burstStream))
	calm := b.Length * (1 - b.Share) / b.Share // mean calm stretch
	p := &bursts{hit: b.Hit, delay: b.Delay, rng: rng}
	slow := rng.Float64() < b.Share
	for t := 0.0; t < secs; {
		mean := calm
		if slow {
			mean = b.Length
		}
		d := rng.ExpFloat64() * mean
		if slow {
			p.slow = append(p.slow, [2]float64{t, t + d})
		}
		t += d
		slow = !slow
	}
	return p
}

// extra is the extra delay in ms of a request starting at t seconds
// (requests come in time order): 0 outside a slow stretch and for a
// request the stretch does not hit.
func (p *bursts) extra(t float64) float64 {
	for len(p.slow) > 0 && p.slow[0][1] <= t {
		p.slow = p.slow[1:]
	}
	if len(p.slow) > 0 && p.slow[0][0] <= t && p.rng.Float64() < p.hit {
		return p.delay * p.rng.ExpFloat64()
	}
	return 0
}

// arrivals is when a run of secs seconds at rate requests a second stops
// starting requests (secs less the drain) and the draw of the gap to the
// next request from rng: exponential, or Erlang with v.Arrivals phases,
// at the rate raised to keep the run's mean rate over the drain.
func (v Variance) arrivals(rng *rand.Rand, rate, secs float64) (end float64, gap func() float64) {
	end = secs
	if d := v.Drain; d > 0 && d < secs {
		end = secs - d
		rate *= secs / end
	}
	if k := v.Arrivals; k > 1 {
		return end, func() float64 {
			var g float64
			for range k {
				g += rng.ExpFloat64()
			}
			return g / (rate * float64(k))
		}
	}
	return end, func() float64 { return rng.ExpFloat64() / rate }
}
