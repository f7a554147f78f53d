package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Change is a figure's change on its own, when the figure was judged
// against a reference.
type Change struct {
	ChangePct float64 `json:"change_pct"`
	CILowPct  float64 `json:"ci_low_pct"`
	CIHighPct float64 `json:"ci_high_pct"`
}

// Ratio is an endpoint figure's ratio to the run's other endpoints (its
// value over their weighted geometric mean, Figure.Against), the
// geometric mean over the baseline runs and over the candidates: the
// levels a figure judged against them is judged by, so that its
// ChangePct is Candidate/Baseline − 1.
type Ratio struct {
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
}

// reference is the fixed mixture of other endpoints an endpoint is
// judged against.
type reference struct {
	keys    []string
	weights []float64
	runs    []int // baseline runs (indexes into c.base) that carry the endpoint and every other
}

// referenceFor chooses the other endpoints with a median in every
// baseline run that carries the endpoint's figure and in every
// candidate, weighted by their mean request count over the baseline
// runs: the inverse of a median's sampling variance, for latency
// distributions of like shape. Without counts, by the envelope's request
// shares; without those, equally. ok is false when no other endpoint
// qualifies or fewer than 2 baseline runs remain.
func (c *comparer) referenceFor(k figures.Key) (reference, string, bool) {
	var runs []int
	for i := range c.base {
		if v, ok := c.base[i].Value(k); ok && v.X > 0 {
			runs = append(runs, i)
		}
	}
	keys := make([]string, 0, len(c.env.Endpoints))
	for o := range c.env.Endpoints {
		if o != k.Endpoint {
			keys = append(keys, o)
		}
	}
	sort.Strings(keys)
	var ref reference
	for _, o := range keys {
		om := figures.Key{Endpoint: o, Figure: figures.Median}
		ok := true
		for _, i := range runs {
			v, has := c.base[i].Value(om)
			ok = ok && has && v.X > 0
		}
		for j := range c.cand {
			v, has := c.cand[j].Value(om)
			ok = ok && has && v.X > 0
		}
		if ok {
			ref.keys = append(ref.keys, o)
		}
	}
	if len(ref.keys) == 0 {
		return ref, "no other endpoint has a median in every baseline and candidate run", false
	}
	if len(runs) < 2 {
		return ref, fmt.Sprintf("%d baseline run(s) carry it", len(runs)), false
	}
	ref.runs = runs
	ref.weights = make([]float64, len(ref.keys))
	counts, shares := true, true
	for j, o := range ref.keys {
		var n float64
		for _, i := range runs {
			cnt := c.base[i].Endpoints[o].Count
			counts = counts && cnt > 0
			n += float64(cnt)
		}
		ref.weights[j] = n
		shares = shares && c.env.Endpoints[o].Share > 0
	}
	for j, o := range ref.keys {
		switch {
		case counts:
		case shares:
			ref.weights[j] = c.env.Endpoints[o].Share
		default:
			ref.weights[j] = 1
		}
	}
	var sum float64
	for _, w := range ref.weights {
		sum += w
	}
	for j := range ref.weights {
		ref.weights[j] /= sum
	}
	return ref, "", true
}

// against is a run's level of figure k against the reference:
// y = ln x_k − Σ_o w_o ln median_o, with its own sampling variance
// v_k + Σ_o w_o² v_o where every one of them is known (NaN otherwise).
func (ref reference) against(r *figures.Run, k figures.Key) stats.RunValue {
	own, _ := r.RunValue(k)
	y, v := math.Log(own.X), own.LogVar
	for j, o := range ref.keys {
		m, _ := r.RunValue(figures.Key{Endpoint: o, Figure: figures.Median})
		y -= ref.weights[j] * math.Log(m.X)
		v += ref.weights[j] * ref.weights[j] * m.LogVar
	}
	return stats.RunValue{X: math.Exp(y), LogVar: v}
}

// String names the reference, heaviest first: "the run's other
// endpoints (actor_get 85%, …)".
func (ref reference) String() string {
	idx := make([]int, len(ref.keys))
	for j := range idx {
		idx[j] = j
	}
	sort.SliceStable(idx, func(a, b int) bool { return ref.weights[idx[a]] > ref.weights[idx[b]] })
	parts := make([]string, len(ref.keys))
	for j, i := range idx {
		parts[j] = fmt.Sprintf("%s %.0f%%", ref.keys[i], 100*ref.weights[i])
	}
	return "the run's other endpoints (" + strings.Join(parts, ", ") + ")"
}

// againstOthers judges an endpoint figure by the endpoint's level
// against the run's other endpoints. cv are the candidates' values of
// the figure. It returns false, with a note, when no reference can be
// formed: the figure is then judged alone.
//
// A run's latency level moves every endpoint of the run together
// (deployment, placement, neighbours: about 3.6% a run on the real
// fixture runs, against 1.3% for an endpoint on its own). Judged alone,
// an endpoint's change carries that shared movement; judged against the
// other endpoints of the same run, as a canary is judged beside a
// baseline running at the same time, it cancels. Per run r, the
// endpoint's own level is
//
//	y_r = ln median_{r,e} − Σ_o w_o ln median_{r,o}
//
// over the other endpoints o, with the same weights w in the baseline
// and the candidate runs, so that the reference is one fixed mixture and
// moves only when the other endpoints do. A change that moves the whole
// service is the business of the headline figures and of the endpoints'
// own tails.
func (c *comparer) againstOthers(f *Figure, k figures.Key, own []stats.RunValue) bool {
	ref, why, ok := c.referenceFor(k)
	if !ok {
		f.Note = joinNote(f.Note, "judged on its own, not against the run's other endpoints: "+why)
		return false
	}
	base := make([]stats.RunValue, len(ref.runs))
	for j, i := range ref.runs {
		base[j] = ref.against(&c.base[i], k)
	}
	cand := make([]stats.RunValue, len(c.cand))
	for j := range c.cand {
		cand[j] = ref.against(&c.cand[j], k)
	}
	rel, err := c.levelCI(base, cand)
	if err != nil {
		f.Note = joinNote(f.Note, "judged on its own, not against the run's other endpoints: "+err.Error())
		return false
	}
	absBase := c.baseValues(k)
	abs, err := c.levelCI(absBase, own)
	if err != nil {
		f.Note = joinNote(f.Note, "judged on its own, not against the run's other endpoints: "+err.Error())
		return false
	}
	f.Method = ""
	c.judge(f, rel, f.Better, c.tol.LatencyRise)
	f.Method += ", the endpoint's level against " + ref.String() + " run by run"
	f.Baseline, f.Candidate = geoMeanOf(absBase), geoMeanOf(own)
	f.Against = ref.String()
	f.Ratio = &Ratio{Baseline: geoMeanOf(base), Candidate: geoMeanOf(cand)}
	f.Absolute = &Change{ChangePct: 100 * abs.Change(), CILowPct: 100 * (abs.Low - 1), CIHighPct: 100 * (abs.High - 1)}
	c.requireAbsolute(f, abs)
	if !f.beyond && abs.Ratio > 1+c.tol.LatencyRise {
		f.Note = joinNote(f.Note, fmt.Sprintf("on its own it rose %.1f%%, with the run's other endpoints: a change of the whole service, which the headline figures judge", 100*abs.Change()))
	}
	return true
}

// requireAbsolute asks the endpoint's own estimate to have risen too,
// beyond half the tolerance (judgeConfig.ownRise): without it the figure
// is no Regression (nor, the other way, an Improvement).
func (c *comparer) requireAbsolute(f *Figure, abs stats.RatioCI) {
	need := c.judging.ownRise(c.tol.LatencyRise)
	if f.beyond && abs.Ratio <= 1+need {
		f.beyond = false
		if f.Verdict == Regression {
			f.Verdict = Inconclusive
		}
		f.Note = joinNote(f.Note, fmt.Sprintf("slower against the run's other endpoints, but its own estimate %+.1f%% is not beyond %+.1f%%", 100*abs.Change(), 100*need))
	}
	if f.Verdict == Improvement && abs.Ratio >= 1-need {
		f.Verdict = Pass
	}
}
