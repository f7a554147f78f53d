package simulate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
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
// by EstimateVariance; docs/rules.md gives the estimates, the method and
// the test that recomputes them. The judges' power tests draw every run
// with it. A function, so that no caller can change it for the others.
func RealVariance() Variance {
	return Variance{Latency: 0.036, Endpoint: 0.013, Throughput: 0}
}

// Max is the larger of v's and w's component in each family: the model
// that covers estimates from two sets of runs.
func (v Variance) Max(w Variance) Variance {
	return Variance{Latency: math.Max(v.Latency, w.Latency), Endpoint: math.Max(v.Endpoint, w.Endpoint), Throughput: math.Max(v.Throughput, w.Throughput)}
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
func Sequence(base Options, n int, steps ...Step) []Options {
	out := make([]Options, n)
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

// RunSample is what the variance estimate needs of one real run: its
// request rate and count, and its latency samples, sorted, overall and
// per endpoint.
type RunSample struct {
	Source    string
	RPS       float64
	Requests  float64
	Aggregate []float64
	Endpoints map[string][]float64
}

// SampleOf reads a run with points (k6.LoadOptions.KeepPoints) into a
// RunSample, its endpoints selected as eps selects them.
func SampleOf(r *k6.Run, eps map[string]envelope.Endpoint) (RunSample, error) {
	s := RunSample{Source: r.Source}
	m := r.Metrics["http_reqs"]
	if m == nil || r.Duration <= 0 {
		return s, fmt.Errorf("%s: no http_reqs count or no duration", r.Source)
	}
	s.Requests = m.Values["count"]
	s.RPS = s.Requests / r.Duration.Seconds()
	s.Aggregate, s.Endpoints = envelope.Samples(r, eps)
	if len(s.Aggregate) == 0 {
		return s, fmt.Errorf("%s: no http_req_duration points (load it with its points)", r.Source)
	}
	return s, nil
}

// Component is one family's method-of-moments estimate.
type Component struct {
	Family string // "latency", "throughput", or "endpoint <key>"
	Runs   int
	DF     int // degrees of freedom of the between-run variance
	// Between is the pooled between-run variance of the log figure
	// within groups; Within the mean within-run sampling variance of it;
	// Run = max(0, Between − Within) the run-level variance, and SD its
	// square root.
	Between, Within, Run, SD float64
}

// sampleLogVar is the sampling variance of ln of the p quantile of
// sorted samples, from its order-statistic interval; NaN when too few.
func sampleLogVar(xs []float64, p float64) float64 {
	lo, hi, ok := stats.QuantileCI(xs, p, 0.95)
	if !ok {
		return math.NaN()
	}
	se := stats.LogSEOfInterval(lo, hi, 0.95)
	return se * se
}

// moments pools the between-run variance of per-run values within
// groups and averages their sampling variances.
func moments(family string, groups [][]float64, within [][]float64) (Component, error) {
	c := Component{Family: family}
	var ss, vs float64
	nv := 0
	for g, xs := range groups {
		if len(xs) < 2 {
			continue
		}
		var mean float64
		for _, x := range xs {
			mean += x
		}
		mean /= float64(len(xs))
		for i, x := range xs {
			ss += (x - mean) * (x - mean)
			if v := within[g][i]; !math.IsNaN(v) {
				vs += v
				nv++
			}
		}
		c.Runs += len(xs)
		c.DF += len(xs) - 1
	}
	if c.DF < 1 {
		return c, fmt.Errorf("%s: fewer than 2 runs in every group", family)
	}
	c.Between = ss / float64(c.DF)
	if nv > 0 {
		c.Within = vs / float64(nv)
	}
	c.Run = math.Max(0, c.Between-c.Within)
	c.SD = math.Sqrt(c.Run)
	return c, nil
}

// EstimateVariance estimates the run-level variance components by the
// method of moments from groups of real runs, each group made under the
// same settings (so a known change between groups is not counted as
// spread). For each family the per-run log figure is the log median
// latency (aggregate, or the endpoint's) or the log request rate; its
// between-run variance, pooled within groups, less the mean within-run
// sampling variance (from the median's order-statistic interval, or
// 1/requests for a count), floored at 0, is the run-level variance. An
// endpoint's own component is what its total exceeds the aggregate
// level's; Variance.Endpoint is the root mean square of the endpoints'
// own components (each endpoint draws one factor per run).
func EstimateVariance(groups [][]RunSample) (Variance, []Component, error) {
	if len(groups) == 0 {
		return Variance{}, nil, errors.New("no runs")
	}
	type fam struct{ vals, vars [][]float64 }
	get := func(f *fam, g int, x, v float64) {
		for len(f.vals) <= g {
			f.vals, f.vars = append(f.vals, nil), append(f.vars, nil)
		}
		f.vals[g] = append(f.vals[g], x)
		f.vars[g] = append(f.vars[g], v)
	}
	var agg, thr fam
	eps := map[string]*fam{}
	for g, runs := range groups {
		for _, r := range runs {
			get(&agg, g, math.Log(stats.Quantile(r.Aggregate, 0.5)), sampleLogVar(r.Aggregate, 0.5))
			get(&thr, g, math.Log(r.RPS), 1/r.Requests)
			for k, xs := range r.Endpoints {
				if len(xs) == 0 {
					continue
				}
				if eps[k] == nil {
					eps[k] = &fam{}
				}
				get(eps[k], g, math.Log(stats.Quantile(xs, 0.5)), sampleLogVar(xs, 0.5))
			}
		}
	}
	var comps []Component
	a, err := moments("latency", agg.vals, agg.vars)
	if err != nil {
		return Variance{}, nil, err
	}
	t, err := moments("throughput", thr.vals, thr.vars)
	if err != nil {
		return Variance{}, nil, err
	}
	comps = append(comps, a, t)
	v := Variance{Latency: a.SD, Throughput: t.SD}
	keys := make([]string, 0, len(eps))
	for k := range eps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sum float64
	n := 0
	for _, k := range keys {
		c, err := moments("endpoint "+k, eps[k].vals, eps[k].vars)
		if err != nil {
			continue
		}
		comps = append(comps, c)
		sum += math.Max(0, c.Run-a.Run)
		n++
	}
	if n > 0 {
		v.Endpoint = math.Sqrt(sum / float64(n))
	}
	return v, comps, nil
}
