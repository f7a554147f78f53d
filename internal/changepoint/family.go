package changepoint

import (
	"math"
	"slices"
	"sort"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// MemberP is the p-value at which a figure of an endpoint whose latency
// family changed is named in the change: its own shift at the family's
// run, against the same neighbouring segments, in the family's
// direction. The family's test decides that a step happened; this only
// says which of its figures show it.
const MemberP = 0.05

// A family is an endpoint's latency figures judged together. A step of
// an endpoint's latency moves its average, median, p95 and p99 by about
// the same ratio at once, so they are one hypothesis, counted once by the
// false discovery rate rather than once per figure, and their evidence
// adds up. At a candidate run each figure's weighted t-test against the
// family's neighbouring change points gives its shift d and standard
// error se, as a z of the same p-value and sign; the family's z is their
// sum weighted by precision (1/se: the common ratio is estimated best
// from the figures that measure it best) over its standard deviation
// under their correlation, √(wᵀRw): a run factor moves them all, so R,
// the correlation of the figures' successive-run differences over the
// latest window runs, is far from the identity, and four figures moving
// together are worth much less than four independent ones. The maximum,
// one request of the run, is not tested; it is named in a family's
// change like the others.
//
// The aggregate's latency figures are a family too, but a mixed one: its
// median is the busiest endpoint's, its tail the slowest ones', and a
// step of one endpoint moves some of them only. Its test is its clearest
// figure's p-value, corrected by Šidák's rule for the effective number of
// its figures (Nyholt's, from the eigenvalues of R: 1 when they move as
// one, their number when independent).
type family struct {
	// tested are the family's tested figures' series; all its figures'
	// series, the maximum's included, in the analyzer's order.
	tested, all []*series
	// r is the tested figures' correlation; meff their effective number
	// (Nyholt's, from r's eigenvalues: 1 when they move as one, their
	// number when independent).
	r    [][]float64
	meff float64
	// mixed: the aggregate's figures, tested by the clearest one.
	mixed bool
}

// joint says whether a figure is tested in its endpoint's family.
func joint(n figures.Name) bool { return n.Def().Latency && n != figures.Max }

// families are the test's families of two tested figures or more, by
// endpoint in the order of their first figure.
func (a *Analyzer) families() map[string]*family {
	out := map[string]*family{}
	if a.alone {
		return out
	}
	var order []string
	for _, k := range a.order {
		if !k.Figure.Def().Latency || a.Len(k) == 0 {
			continue
		}
		f, ok := out[k.Endpoint]
		if !ok {
			f = &family{mixed: k.Endpoint == ""}
			out[k.Endpoint] = f
			order = append(order, k.Endpoint)
		}
		s := a.series[k]
		f.all = append(f.all, s)
		if joint(k.Figure) {
			f.tested = append(f.tested, s)
		}
	}
	for _, e := range order {
		f := out[e]
		if len(f.tested) < 2 {
			delete(out, e)
			continue
		}
		f.r = f.correlation(a.cfg.Window)
		f.meff = effective(f.r)
	}
	return out
}

// correlation is the tested figures' correlation matrix: of their
// successive-run differences over the latest window runs, outlier runs
// left out, at the runs both figures have; 1 where too few runs tell.
func (f *family) correlation(window int) [][]float64 {
	k := len(f.tested)
	type diff struct {
		at int
		d  float64
	}
	diffs := make([][]diff, k)
	for i, s := range f.tested {
		prev := -1
		for j := max(0, len(s.runs)-window); j < len(s.runs); j++ {
			if s.z[j] != 0 {
				continue
			}
			if prev >= 0 {
				diffs[i] = append(diffs[i], diff{s.ref(j).Index, s.y[j] - s.y[prev]})
			}
			prev = j
		}
	}
	r := make([][]float64, k)
	for i := range k {
		r[i] = make([]float64, k)
		r[i][i] = 1
	}
	for i := range k {
		for j := i + 1; j < k; j++ {
			var sxy, sxx, syy float64
			for x, y := 0, 0; x < len(diffs[i]) && y < len(diffs[j]); {
				switch dx, dy := diffs[i][x], diffs[j][y]; {
				case dx.at < dy.at:
					x++
				case dx.at > dy.at:
					y++
				default:
					sxy, sxx, syy = sxy+dx.d*dy.d, sxx+dx.d*dx.d, syy+dy.d*dy.d
					x, y = x+1, y+1
				}
			}
			c := 1.0
			if sxx > 0 && syy > 0 {
				c = sxy / math.Sqrt(sxx*syy)
			}
			r[i][j], r[j][i] = c, c
		}
	}
	return r
}

// effective is Nyholt's effective number of independent tests of a
// correlation matrix r: 1 + (k−1)(1 − Var(λ)/k), Var(λ) the variance of
// its eigenvalues, which is (Σ r² − k)/(k−1) over its entries.
func effective(r [][]float64) float64 {
	k := float64(len(r))
	var sum float64
	for _, row := range r {
		for _, x := range row {
			sum += x * x
		}
	}
	v := (sum - k) / (k - 1)
	return min(k, max(1, 1+(k-1)*(1-v/k)))
}

// test is the family's p-value of a change at line index c between the
// bounds lo and hi (line indices, 0 the start, MaxInt the end), its z
// (signed: up is positive) and the figure with the least p-value there.
func (f *family) test(lo, c, hi int) (p, z float64, best *series) {
	k := len(f.tested)
	w, zs := make([]float64, k), make([]float64, k)
	pmin, dmin := 2.0, 0.0
	for i, s := range f.tested {
		sc := s.posOf(c)
		sl, sh := f.place(s, lo), f.place(s, hi)
		if s.kept(sl, sc) < 1 || s.kept(sc, sh) < 1 {
			continue
		}
		d, se, _, ok := s.shift(sl, sc, sh)
		if !ok || !(se > 0) {
			continue
		}
		pi := s.tTest(sl, sc, sh)
		zs[i] = math.Copysign(zOf(pi), d)
		w[i] = 1 / se
		if pi < pmin {
			pmin, dmin, best = pi, d, s
		}
	}
	if best == nil {
		return 1, 0, nil
	}
	if f.mixed {
		// The clearest figure, corrected for the effective number of
		// figures it was the least of (Šidák).
		p = -math.Expm1(f.meff * math.Log1p(-min(pmin, 1-1e-16)))
		return p, math.Copysign(zOf(p), dmin), best
	}
	var num, v, most float64
	for i := range k {
		num += w[i] * zs[i]
		most = max(most, w[i]*w[i])
		for j := range k {
			v += w[i] * w[j] * f.r[i][j]
		}
	}
	// An estimated correlation that is not a correlation (too few common
	// runs) never makes the figures worth more than the best one alone.
	v = max(v, most)
	z = num / math.Sqrt(v)
	return math.Erfc(math.Abs(z) / math.Sqrt2), z, best
}

// zOf is the normal z of a two-sided p-value.
func zOf(p float64) float64 { return math.Sqrt2 * math.Erfcinv(max(p, 1e-300)) }

// place is a series' place of a family bound: a line index, 0 the
// start, MaxInt the end.
func (f *family) place(s *series, idx int) int {
	switch idx {
	case 0:
		return -s.off
	case math.MaxInt:
		return len(s.runs)
	}
	return s.posOf(idx)
}

// weakPoints are the union of the tested figures' weak change points, as
// line indices.
func (f *family) weakPoints() []int {
	var out []int
	for _, s := range f.tested {
		for _, c := range s.weakPoints() {
			out = append(out, s.ref(c).Index)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (f *family) bounds(cps []int, j int) int {
	switch {
	case j < 0:
		return 0
	case j >= len(cps):
		return math.MaxInt
	}
	return cps[j]
}

// kept is the most kept runs any tested figure has in [lo, hi).
func (f *family) kept(lo, hi int) int {
	n := 0
	for _, s := range f.tested {
		n = max(n, s.kept(f.place(s, lo), f.place(s, hi)))
	}
	return n
}

// merge is the series' merge pass over the family's change points (line
// indices) with the family's test.
func (f *family) merge(cps []int, pmax float64, minRuns int) []int {
	cps = slices.Clone(cps)
	// p-values of the points and kept runs of the segments between them,
	// each recomputed only where a drop changed its neighbours.
	ps := make([]float64, len(cps))
	p := func(j int) float64 {
		q, _, _ := f.test(f.bounds(cps, j-1), cps[j], f.bounds(cps, j+1))
		return q
	}
	seg := make([]int, len(cps)+1)
	kept := func(j int) int { return f.kept(f.bounds(cps, j-1), f.bounds(cps, j)) }
	for j := range cps {
		ps[j] = p(j)
	}
	for j := range seg {
		seg[j] = kept(j)
	}
	for len(cps) > 0 {
		drop, done := mergeDrop(len(cps), func(j int) bool { return seg[j] < minRuns }, ps, pmax)
		if done {
			return cps
		}
		cps = slices.Delete(cps, drop, drop+1)
		ps = slices.Delete(ps, drop, drop+1)
		seg = slices.Delete(seg, drop, drop+1)
		seg[drop] = kept(drop)
		for _, j := range []int{drop - 1, drop} {
			if j >= 0 && j < len(cps) {
				ps[j] = p(j)
			}
		}
	}
	return cps
}

// pAt is the family's p-value of change point cp among cps.
func (f *family) pAt(cps []int, cp int) float64 {
	j := slices.Index(cps, cp)
	p, _, _ := f.test(f.bounds(cps, j-1), cp, f.bounds(cps, j+1))
	return p
}

// posOf is the place of the series' first run at or after line index
// idx: a kept run's, a frozen one's, or the series' end.
func (s *series) posOf(idx int) int {
	i := sort.Search(len(s.runs), func(i int) bool { return s.ref(i).Index >= idx })
	if i > 0 || s.off == 0 || len(s.runs) > 0 && s.ref(0).Index == idx {
		return i
	}
	// The frozen runs in place order carry rising indices.
	j := sort.Search(len(s.frozenAt), func(j int) bool { return s.frozen[s.frozenAt[j]].run.Index >= idx })
	if j == len(s.frozenAt) {
		return i
	}
	return s.frozenAt[j]
}

// mapped are a family's change points (line indices) as places in one
// of its figures' series.
func (f *family) mapped(s *series, cps []int) []int {
	out := make([]int, 0, len(cps))
	for _, c := range cps {
		p := s.posOf(c)
		if p < len(s.runs) && (len(out) == 0 || p > out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

// changes are the changes of a family's figures at its change point cp
// (among cps, the family's): each figure whose own shift at that run,
// against the same neighbouring change points, is in the family's
// direction with p ≤ MemberP. q is the family's
// adjusted p-value.
func (f *family) changes(cps []int, cp int, p, q float64) []Change {
	j := slices.Index(cps, cp)
	_, z, _ := f.test(f.bounds(cps, j-1), cp, f.bounds(cps, j+1))
	dir := direction(figures.HigherIsWorse, z > 0)
	var out []Change
	var clearest *Change
	for _, s := range f.all {
		m := f.mapped(s, cps)
		c := s.posOf(cp)
		if !slices.Contains(m, c) {
			continue
		}
		lo, hi := s.neighbours(m, c)
		if s.kept(lo, c) < 1 || s.kept(c, hi) < 1 {
			continue
		}
		mp := s.tTest(lo, c, hi)
		ch := s.change(m, c, mp, q)
		ch.JointP = p
		if ch.Direction != dir {
			continue
		}
		if joint(s.key.Figure) && (clearest == nil || mp < clearest.P) {
			clearest = &ch
		}
		if mp <= MemberP {
			out = append(out, ch)
		}
	}
	if len(out) == 0 && clearest != nil {
		// A decided step names at least its clearest figure.
		out = append(out, *clearest)
	}
	return out
}

// Suspect is a step the analysis saw but did not decide: a change point
// of a hypothesis' own merge pass at the weak p-value (WeakFactor ×
// PValue) that the test's false discovery rate did not admit.
type Suspect struct {
	// Key is the series; for an endpoint's latency family, its clearest
	// figure.
	Key
	Run       RunRef    `json:"run"`
	Direction Direction `json:"direction"`
	// Before and After are the levels on each side, between the decided
	// change points around it.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Change float64 `json:"change"`
	// P is its test's p-value (a family's, for a family); Decide the
	// p-value that would decide it (the next rank of the test's false
	// discovery rate).
	P      float64 `json:"p"`
	Decide float64 `json:"decide"`
	// RunsBefore and RunsAfter are the kept runs on each side. MoreRuns
	// is how many more runs of each of the commits MoreRunsOf (the run
	// before the step's and the line's latest: a level on each side)
	// would take P to Decide if the shift and the spread stay as observed,
	// 0 when more than maxMoreRuns would.
	RunsBefore int      `json:"runs_before"`
	RunsAfter  int      `json:"runs_after"`
	MoreRuns   int      `json:"more_runs"`
	MoreRunsOf []string `json:"more_runs_of"`
}

// maxMoreRuns bounds the runs a suspect's MoreRuns looks for.
const maxMoreRuns = 1000

// suspects are a hypothesis' suspected steps: its weak merge pass's
// change points (weak) at least MinRuns runs from every decided one (decided:
// its change points the test admitted; admitted: how many the test
// admitted of its m hypotheses' points). A family's is given on its
// clearest figure.
func (a *Analyzer) suspects(u unit, weak, decided []int, admitted, m int) []Suspect {
	need := a.cfg.PValue * float64(admitted+1) / float64(m)
	var out []Suspect
	if u.f == nil {
		for _, c := range weak {
			if near(decided, c, a.cfg.MinRuns) {
				continue
			}
			lo, hi := u.s.neighbours(decided, c)
			if sp, ok := suspect(u.s, lo, c, hi, need, need); ok {
				out = append(out, sp)
			}
		}
		return out
	}
	f := u.f
	for _, c := range weak {
		if near(decided, c, a.cfg.MinRuns) {
			continue
		}
		j, _ := slices.BinarySearch(decided, c)
		lo, hi := f.bounds(decided, j-1), f.bounds(decided, j)
		p, z, best := f.test(lo, c, hi)
		if best == nil {
			continue
		}
		sp, ok := suspect(best, f.place(best, lo), best.posOf(c), f.place(best, hi), need, need)
		if !ok {
			continue
		}
		// The family's z grows with the runs on each side as a shift's
		// does, 1/√(1/n1 + 1/n2).
		sp.P, sp.Direction, sp.MoreRuns = p, direction(figures.HigherIsWorse, z > 0), 0
		n1, n2, zd := float64(sp.RunsBefore), float64(sp.RunsAfter), zOf(need)
		for k := 1.0; k <= maxMoreRuns; k++ {
			if math.Abs(z)*math.Sqrt((1/n1+1/n2)/(1/(n1+k)+1/(n2+k))) >= zd {
				sp.MoreRuns = int(k)
				break
			}
		}
		out = append(out, sp)
	}
	return out
}

func near(cps []int, c, d int) bool {
	for _, x := range cps {
		if abs(x-c) < d {
			return true
		}
	}
	return false
}

// suspect is series s's step at c between lo and hi as a Suspect whose
// test decides at need, the series' own test at own.
func suspect(s *series, lo, c, hi int, need, own float64) (Suspect, bool) {
	n1, w1, m1, r1 := s.segment(lo, c)
	n2, w2, m2, r2 := s.segment(c, hi)
	if n1 < 2 || n2 < 1 || math.IsNaN(m1) || math.IsNaN(m2) {
		return Suspect{}, false
	}
	p := s.tTest(lo, c, hi)
	before, after := s.level(m1), s.level(m2)
	sp := Suspect{Key: s.key, Run: s.ref(c), Direction: direction(s.pol, m2 > m1), Before: before, After: after, P: p, Decide: need,
		RunsBefore: n1, RunsAfter: n2, MoreRunsOf: []string{s.ref(c - 1).Commit, s.ref(len(s.runs) - 1).Commit}}
	if before != 0 {
		sp.Change = after/before - 1
	}
	// More runs on each side, each weighing as a typical run, at the
	// observed shift and spread.
	df := float64(n1 + n2 - 2)
	sd := math.Sqrt((r1 + r2) / df)
	d := math.Abs(m2 - m1)
	for k := 1; k <= maxMoreRuns && sd > 0; k++ {
		kf := float64(k)
		t := d / (sd * math.Sqrt(1/(w1+kf)+1/(w2+kf)))
		if 2*(1-stats.TCDF(t, df+2*kf)) <= own {
			sp.MoreRuns = k
			break
		}
	}
	return sp, true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
