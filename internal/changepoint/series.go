package changepoint

import (
	"fmt"
	"math"
	"slices"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// series is one figure's runs and what the analysis derived from them.
//
// Every derived value of run i depends only on runs within a bounded
// distance of it (its block and the one before, Neighbours runs on each
// side), and a window's weak change points only on the runs inside it,
// so appending a run re-derives the last block or so and re-runs the
// windows that reach it; everything before is kept, and the answer is
// the one a from-scratch analysis gives.
type series struct {
	key  Key
	pol  figures.Polarity
	cfg  Config
	runs []Run

	// linear is set once a value ≤ 0 is seen (an error rate of 0): the
	// series is then analysed as is instead of on the log scale.
	linear bool
	zConf  float64   // normal quantile of the intervals' confidence
	y0     float64   // transformed first value, subtracted for precision
	y      []float64 // transformed value minus y0
	v      []float64 // the run's own sampling variance (transformed), NaN unknown

	scale []float64 // per block: robust standard deviation of y
	tau2  []float64 // per block: between-run variance
	typ   []float64 // per block: a typical run's total variance
	vc    []float64 // per block: median of own variance × count where known (NaN none)
	iv    []float64 // per run: own sampling variance, known or imputed
	sig2  []float64 // per run: total variance, between-run + own
	z     []float64 // per run: signed distance from both sides, in σ (0 when not an outlier)

	// Prefix sums over runs of the runs kept for testing (outliers
	// excluded): count, Σw, Σw·y, Σw·y², with w = typ/sig2: a run
	// weighs 1 unless its own sampling error differs from its peers'.
	pn            []int
	pw, pwy, pwy2 []float64
	scratch       []float64     // reused for medians
	windows       map[int][]int // weak change points by window start
	dirty         int           // first run whose derived values are stale
	// off is the number of runs before the first one kept whole (a
	// series restored from a checkpoint): indices in the arrays above
	// are off less than the run's place in the series, and of the runs
	// before (negative indices) only what the merge pass and the outlier
	// list read is kept, in frozen.
	off    int
	frozen map[int]frozenRun
	// frozenAt are frozen's places in order.
	frozenAt []int
	// frozenWeak are the weak change points of the windows before the
	// kept runs, which no append re-runs.
	frozenWeak []int
}

// frozenRun is a run before a restored series' tail: its run, derived
// values and prefix sums (at its index, before it).
type frozenRun struct {
	run           Run
	y, sig2, z    float64
	pn            int
	pw, pwy, pwy2 float64
}

// n is the number of runs of the series.
func (s *series) n() int { return s.off + len(s.runs) }

// prefix is the prefix sums before run i (i may be a frozen run's index,
// or -off: the series' start).
func (s *series) prefix(i int) (n int, w, wy, wy2 float64) {
	if i >= 0 {
		return s.pn[i], s.pw[i], s.pwy[i], s.pwy2[i]
	}
	if i == -s.off {
		return 0, 0, 0, 0
	}
	f, ok := s.frozen[i]
	if !ok {
		// Never: a checkpoint keeps every run the merge pass bounds a
		// segment with.
		panic(fmt.Sprintf("changepoint: %s: run %d left out of the checkpoint", s.key, i+s.off+1))
	}
	return f.pn, f.pw, f.pwy, f.pwy2
}

// run is run i, frozen or kept.
func (s *series) run(i int) Run {
	if i >= 0 {
		return s.runs[i]
	}
	return s.frozen[i].run
}

func newSeries(k Key, pol figures.Polarity, cfg Config) *series {
	return &series{key: k, pol: pol, cfg: cfg, windows: map[int][]int{},
		zConf: stats.NormalQuantile(1 - (1-cfg.Confidence)/2),
		pn:    []int{0}, pw: []float64{0}, pwy: []float64{0}, pwy2: []float64{0}}
}

func (s *series) step() int { return s.cfg.Window / 2 }

func (s *series) transform(x float64) float64 {
	if s.linear {
		return x
	}
	return math.Log(x)
}

func (s *series) ownVar(r Run) float64 {
	if !(r.Hi > 0) || !(r.Lo > 0) && !s.linear {
		return math.NaN()
	}
	d := (s.transform(r.Hi) - s.transform(r.Lo)) / (2 * s.zConf)
	return d * d
}

func (s *series) append(r Run) {
	s.runs = append(s.runs, r)
	if r.Value <= 0 && !s.linear {
		// The log scale no longer applies: everything is derived again.
		s.linear = true
		s.dirty = 0
		clear(s.windows)
		s.y0 = s.transform(s.runs[0].Value)
		s.y, s.v = s.y[:0], s.v[:0]
		for _, x := range s.runs {
			s.y = append(s.y, s.transform(x.Value)-s.y0)
			s.v = append(s.v, s.ownVar(x))
		}
		return
	}
	if len(s.runs) == 1 {
		s.y0 = s.transform(r.Value)
	}
	s.y = append(s.y, s.transform(r.Value)-s.y0)
	s.v = append(s.v, s.ownVar(r))
	s.dirty = min(s.dirty, len(s.runs)-1)
}

// refresh re-derives what runs appended since the last call changed.
func (s *series) refresh() {
	n := len(s.runs)
	if s.dirty >= n {
		return
	}
	S, h := s.step(), s.cfg.Neighbours
	from := s.dirty
	firstBlock := from / S
	if from < 2*S {
		firstBlock = 0 // early blocks borrow the first 2S runs
	}
	nb := (n + S - 1) / S
	s.scale = resize(s.scale, nb)
	s.tau2 = resize(s.tau2, nb)
	s.vc = resize(s.vc, nb)
	for b := firstBlock; b < nb; b++ {
		s.blockScale(b)
	}
	first := max(0, min(firstBlock*S, from-h))
	s.iv = resize(s.iv, n)
	s.sig2 = resize(s.sig2, n)
	s.z = resize(s.z, n)
	for i := first; i < n; i++ {
		s.iv[i] = s.imputedVar(i)
		s.sig2[i] = s.tau2[i/S]/repeats(s.runs[i]) + s.iv[i]
	}
	s.typ = resize(s.typ, nb)
	for b := firstBlock; b < nb; b++ {
		lo, hi := s.blockRange(b)
		s.scratch = append(s.scratch[:0], s.iv[lo:hi]...)
		s.typ[b] = s.tau2[b] + median(s.scratch)
	}
	for i := first; i < n; i++ {
		s.z[i] = s.outlierZ(i)
	}
	s.pn, s.pw, s.pwy, s.pwy2 = s.pn[:first+1], s.pw[:first+1], s.pwy[:first+1], s.pwy2[:first+1]
	if cap(s.pn) < n+1 {
		c := max(n+1, 2*cap(s.pn))
		s.pn = append(make([]int, 0, c), s.pn...)
		s.pw = append(make([]float64, 0, c), s.pw...)
		s.pwy = append(make([]float64, 0, c), s.pwy...)
		s.pwy2 = append(make([]float64, 0, c), s.pwy2...)
	}
	for i := first; i < n; i++ {
		cn, w, wy, wy2 := 0, 0.0, 0.0, 0.0
		if s.z[i] == 0 {
			// Weights relative to the block's typical run, so that the
			// noise of each block's spread estimate never tilts one block
			// against another: only a run's own error sets it apart.
			w = 1.0
			if s.sig2[i] > 0 && s.typ[i/S] > 0 {
				w = s.typ[i/S] / s.sig2[i]
			}
			cn, wy, wy2 = 1, w*s.y[i], w*s.y[i]*s.y[i]
		}
		s.pn = append(s.pn, s.pn[i]+cn)
		s.pw = append(s.pw, s.pw[i]+w)
		s.pwy = append(s.pwy, s.pwy[i]+wy)
		s.pwy2 = append(s.pwy2, s.pwy2[i]+wy2)
	}
	for start := range s.windows {
		if start+s.cfg.Window > first {
			delete(s.windows, start)
		}
	}
	s.dirty = n
}

// repeats is the number of runs a point pools, at least 1.
func repeats(r Run) float64 { return float64(max(1, r.Repeats)) }

func resize(xs []float64, n int) []float64 {
	if cap(xs) >= n {
		return xs[:n]
	}
	out := make([]float64, n, max(n, 2*cap(xs)))
	copy(out, xs)
	return out
}

// blockRange is the runs a block's scale is estimated from: the block
// and the one before, or the first 2S runs when that holds too few.
func (s *series) blockRange(b int) (lo, hi int) {
	S, n := s.step(), len(s.runs)
	lo, hi = max(0, (b-1)*S), min(n, (b+1)*S)
	if hi-lo < 11 {
		lo, hi = 0, min(n, 2*S)
	}
	return lo, hi
}

// blockScale estimates a block's spread from the median absolute
// difference of successive runs, which one step or one outlier barely
// moves, and splits it into the between-run variance and the runs' own
// sampling variance where that is known.
func (s *series) blockScale(b int) {
	lo, hi := s.blockRange(b)
	d := make([]float64, 0, hi-lo)
	for j := lo; j+1 < hi; j++ {
		// A difference of pooled points, as one of single runs.
		d = append(d, math.Abs(s.y[j+1]-s.y[j])/math.Sqrt((1/repeats(s.runs[j])+1/repeats(s.runs[j+1]))/2))
	}
	if len(d) == 0 {
		s.scale[b], s.tau2[b], s.vc[b] = 0, 0, math.NaN()
		return
	}
	sd := 1.4826 * median(d) / math.Sqrt2
	s.scale[b] = sd
	var own []float64
	for j := lo; j < hi; j++ {
		if !math.IsNaN(s.v[j]) {
			own = append(own, s.v[j])
		}
	}
	tau2 := sd * sd
	s.scratch = s.scratch[:0]
	for j := lo; j < hi; j++ {
		if !math.IsNaN(s.v[j]) && s.runs[j].Count > 0 {
			s.scratch = append(s.scratch, s.v[j]*float64(s.runs[j].Count))
		}
	}
	s.vc[b] = math.NaN()
	if len(s.scratch) > 0 {
		s.vc[b] = median(s.scratch)
	}
	if len(own) > 0 {
		// A run's own error never accounts for more than 3/4 of the spread:
		// the between-run part is never assumed away.
		tau2 = max(tau2-median(own), tau2/4)
	}
	s.tau2[b] = tau2
}

// imputedVar is a run's own sampling variance: from its interval, else
// scaled by request count from the runs of its block whose interval is
// known (a quantile's variance falls as 1/count), else 0 (all spread is
// then between runs).
func (s *series) imputedVar(i int) float64 {
	if !math.IsNaN(s.v[i]) {
		return s.v[i]
	}
	c := s.runs[i].Count
	if c <= 0 {
		return 0
	}
	vc := s.vc[i/s.step()]
	if math.IsNaN(vc) {
		return 0
	}
	return vc / float64(c)
}

// outlierZ is how far run i lies from the runs on both sides of it, in
// the same direction, in standard deviations; 0 unless beyond OutlierZ
// on both sides (and each side has at least 2 runs).
func (s *series) outlierZ(i int) float64 {
	h, n := s.cfg.Neighbours, len(s.runs)
	lo, hi := max(0, i-h), min(n, i+h+1)
	if i-lo < 2 || hi-i-1 < 2 {
		return 0
	}
	// A median lies above its smallest value: a run within the outlier
	// distance of the least (greatest) run on either side cannot be an
	// outlier upward (downward), and most runs stop here.
	thr := s.cfg.OutlierZ * math.Sqrt(max(s.sig2[i], 0))
	yi := s.y[i]
	lmin, lmax := minMax(s.y[lo:i])
	rmin, rmax := minMax(s.y[i+1 : hi])
	if !(yi > lmin+thr && yi > rmin+thr) && !(yi < lmax-thr && yi < rmax-thr) {
		return 0
	}
	sd := s.scale[i/s.step()]
	side := func(xs []float64) float64 {
		s.scratch = append(s.scratch[:0], xs...)
		d := s.y[i] - median(s.scratch)
		v := s.sig2[i] + math.Pi/2*sd*sd/float64(len(xs))
		if v <= 0 {
			if d == 0 {
				return 0
			}
			return math.Copysign(math.Inf(1), d)
		}
		return d / math.Sqrt(v)
	}
	zl, zr := side(s.y[lo:i]), side(s.y[i+1:hi])
	if zl*zr <= 0 {
		return 0
	}
	z := zl
	if math.Abs(zr) < math.Abs(z) {
		z = zr
	}
	if math.Abs(z) <= s.cfg.OutlierZ {
		return 0
	}
	return z
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = xs[0], xs[0]
	for _, x := range xs[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}

// segment is the weighted mean and the counts of the kept runs in [a, b).
func (s *series) segment(a, b int) (n int, w, mean, rss float64) {
	na, wa, wya, wy2a := s.prefix(a)
	nb, wb, wyb, wy2b := s.prefix(b)
	n, w = nb-na, wb-wa
	if n == 0 || w <= 0 {
		return n, w, math.NaN(), 0
	}
	sy := wyb - wya
	mean = sy / w
	rss = max(0, wy2b-wy2a-sy*mean)
	return n, w, mean, rss
}

// tTest is the p-value of a change at c between the segments [a, c) and
// [c, b): Student's two-sample t with each run weighted by the inverse of
// its variance, the common scale estimated from both segments' residuals
// (so with equal weights it is Student's test).
func (s *series) tTest(a, c, b int) float64 {
	d, se, df, ok := s.shift(a, c, b)
	switch {
	case !ok:
		return 1
	case !(se > 0):
		if d == 0 {
			return 1
		}
		return 0
	}
	return 2 * (1 - stats.TCDF(math.Abs(d)/se, df))
}

// shift is the weighted t-test's shift m2 − m1 between [a, c) and
// [c, b), its standard error and degrees of freedom; ok is false when
// the segments hold too few runs for a test.
func (s *series) shift(a, c, b int) (d, se, df float64, ok bool) {
	n1, w1, m1, r1 := s.segment(a, c)
	n2, w2, m2, r2 := s.segment(c, b)
	if n1 < 1 || n2 < 1 || n1+n2 < 3 {
		return 0, 0, 0, false
	}
	df = float64(n1 + n2 - 2)
	return m2 - m1, math.Sqrt((r1 + r2) / df * (1/w1 + 1/w2)), df, true
}

// kept is the number of runs kept for testing in [a, b).
func (s *series) kept(a, b int) int {
	na, _, _, _ := s.prefix(a)
	nb, _, _, _ := s.prefix(b)
	return nb - na
}

// weakPoints are the union of every window's weak change points.
func (s *series) weakPoints() []int {
	s.refresh()
	n, S, W := len(s.runs), s.step(), s.cfg.Window
	weak := slices.Clone(s.frozenWeak)
	for start := 0; start < n; start += S {
		cps, ok := s.windows[start]
		if !ok {
			cps = s.splitWindow(start, min(n, start+W))
			s.windows[start] = cps
		}
		weak = append(weak, cps...)
		if start+W >= n {
			break
		}
	}
	slices.Sort(weak)
	return slices.Compact(weak)
}

// mergeDrop is the change point (of n, with p-values ps) a merge pass
// drops next: an end of the first segment too short (short(j) for the
// segment before point j, j = n the last), the weaker of its two ends;
// else the weakest point, unless every p-value is at most pmax, when the
// pass is done.
func mergeDrop(n int, short func(j int) bool, ps []float64, pmax float64) (drop int, done bool) {
	for j := 0; j <= n; j++ {
		if !short(j) {
			continue
		}
		switch {
		case j == 0:
			return 0, false
		case j == n:
			return j - 1, false
		case ps[j-1] >= ps[j]:
			return j - 1, false
		}
		return j, false
	}
	worst := 0
	for j := range ps {
		if ps[j] > ps[worst] {
			worst = j
		}
	}
	return worst, ps[worst] <= pmax
}

// merge drops the weakest change point until every one left has a
// p-value at most pmax against its neighbouring segments and every
// segment holds MinRuns kept runs.
func (s *series) merge(cps []int, pmax float64) []int {
	n := len(s.runs)
	for len(cps) > 0 {
		bound := func(j int) int {
			switch {
			case j < 0:
				return -s.off
			case j >= len(cps):
				return n
			}
			return cps[j]
		}
		ps := make([]float64, len(cps))
		for j := range cps {
			ps[j] = s.tTest(bound(j-1), cps[j], bound(j+1))
		}
		drop, done := mergeDrop(len(cps), func(j int) bool { return s.kept(bound(j-1), bound(j)) < s.cfg.MinRuns }, ps, pmax)
		if done {
			return cps
		}
		cps = slices.Delete(cps, drop, drop+1)
	}
	return cps
}

// pAt is the p-value of change point cp among cps.
func (s *series) pAt(cps []int, cp int) float64 {
	a, b := s.neighbours(cps, cp)
	return s.tTest(a, cp, b)
}

func (s *series) neighbours(cps []int, cp int) (a, b int) {
	a, b = -s.off, len(s.runs)
	for _, x := range cps {
		if x < cp {
			a = x
		} else if x > cp {
			b = x
			break
		}
	}
	return a, b
}

// ref places run i (0-based in the series) in the line.
func (s *series) ref(i int) RunRef {
	r := s.run(i)
	idx := r.Index
	if idx == 0 {
		idx = s.off + i + 1
	}
	return RunRef{Index: idx, TestID: r.TestID, Commit: r.Commit}
}

func (s *series) level(mean float64) float64 {
	if s.linear {
		return mean + s.y0
	}
	return math.Exp(mean + s.y0)
}

func (s *series) change(cps []int, cp int, p, q float64) Change {
	a, b := s.neighbours(cps, cp)
	_, _, m1, _ := s.segment(a, cp)
	_, _, m2, _ := s.segment(cp, b)
	before, after := s.level(m1), s.level(m2)
	rel := 0.0 // undefined from a level of 0 (an error rate without errors): see Delta
	if before != 0 {
		rel = after/before - 1
	}
	ref := s.ref(cp)
	// A run without a commit is named by its test id, else its index.
	name := ref.Commit
	if name == "" {
		name = ref.TestID
	}
	if name == "" {
		name = fmt.Sprintf("#%d", ref.Index)
	}
	return Change{
		ID: ChangeID(s.key, name), Key: s.key,
		Run:       s.ref(cp),
		Direction: direction(s.pol, m2 > m1),
		Before:    before, After: after, Delta: after - before, Change: rel, P: p, Q: q,
	}
}

func (s *series) outliers(cps []int) []Outlier {
	var out []Outlier
	// The frozen outliers first (negative indices, in order), then the
	// kept runs'.
	var idx []int
	for i, f := range s.frozen {
		if f.z != 0 {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	for i, z := range s.z {
		if z != 0 {
			idx = append(idx, i)
		}
	}
	for _, i := range idx {
		r, y, sig2, z := s.runPoint(i)
		a, b := s.neighbours(cps, i)
		if slices.Contains(cps, i) {
			a = i
		}
		_, _, m, _ := s.segment(a, b)
		if math.IsNaN(m) {
			continue
		}
		lvl := s.level(m)
		o := Outlier{Key: s.key, Run: s.ref(i),
			Direction: direction(s.pol, z > 0), Value: r.Value, SegmentMean: lvl,
		}
		if sig2 > 0 {
			o.Sigmas = (y - m) / math.Sqrt(sig2)
		}
		if lvl != 0 {
			o.Change = r.Value/lvl - 1
		}
		out = append(out, o)
	}
	return out
}

// runPoint is run i with its transformed value, total variance and
// outlier distance, frozen or kept.
func (s *series) runPoint(i int) (r Run, y, sig2, z float64) {
	if i < 0 {
		f := s.frozen[i]
		return f.run, f.y, f.sig2, f.z
	}
	return s.runs[i], s.y[i], s.sig2[i], s.z[i]
}
