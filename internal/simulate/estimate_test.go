package simulate

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// The method of moments RealVariance was estimated by, which
// TestRealVarianceEstimate reruns on the real fixture runs
// (docs/rules.md).

// runSample is what the variance estimate needs of one real run: its
// request rate and count, and its latency samples, sorted, overall and
// per endpoint.
type runSample struct {
	Source    string
	RPS       float64
	Requests  float64
	Aggregate []float64
	Endpoints map[string][]float64
}

// sampleOf reads a run with points (k6.LoadOptions.KeepPoints) into a
// runSample, its endpoints selected as eps selects them.
func sampleOf(r *k6.Run, eps map[string]envelope.Endpoint) (runSample, error) {
	s := runSample{Source: r.Source}
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

// component is one family's method-of-moments estimate.
type component struct {
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
func moments(family string, groups [][]float64, within [][]float64) (component, error) {
	c := component{Family: family}
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

// estimateVariance estimates the run-level variance components by the
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
func estimateVariance(groups [][]runSample) (Variance, []component, error) {
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
	var comps []component
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

// larger is the larger of v's and w's component in each family: the
// model that covers estimates from two sets of runs.
func (v Variance) larger(w Variance) Variance {
	return Variance{Latency: math.Max(v.Latency, w.Latency), Endpoint: math.Max(v.Endpoint, w.Endpoint), Throughput: math.Max(v.Throughput, w.Throughput)}
}
