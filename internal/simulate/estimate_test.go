package simulate

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/envelope-dev/envelope/internal/figures"
)

// The method of moments RealVariance was estimated by, which
// TestRealVarianceEstimate reruns on the real fixture runs
// (docs/rules.md).

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
func estimateVariance(groups [][]figures.Run) (Variance, []component, error) {
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
	logOf := func(r *figures.Run, k figures.Key) (x, v float64, ok bool) {
		rv, ok := r.RunValue(k)
		return math.Log(rv.X), rv.LogVar, ok && rv.X > 0
	}
	for g, runs := range groups {
		for i := range runs {
			r := &runs[i]
			for _, f := range []struct {
				fam *fam
				key figures.Key
			}{{&agg, figures.Key{Figure: figures.Median}}, {&thr, figures.Key{Figure: figures.RPS}}} {
				x, v, ok := logOf(r, f.key)
				if !ok {
					return Variance{}, nil, fmt.Errorf("%s: no %s", r.Source, f.key)
				}
				get(f.fam, g, x, v)
			}
			for _, k := range r.EndpointKeys() {
				x, v, ok := logOf(r, figures.Key{Endpoint: k, Figure: figures.Median})
				if !ok {
					continue
				}
				if eps[k] == nil {
					eps[k] = &fam{}
				}
				get(eps[k], g, x, v)
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
