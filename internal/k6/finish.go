package k6

import (
	"slices"
	"sync"

	"github.com/envelope-dev/envelope/internal/stats"
)

// target is one metric, sub-metric or group view to compute.
type target struct {
	m      *metricInfo
	name   string
	tags   map[string]string
	sub    int    // -1 for the parent
	group  string // when grouped
	grp    bool
	result *Metric
}

func (t *target) wantsClass(c classInfo) bool {
	if t.sub >= 0 && c.bits&(1<<t.sub) == 0 {
		return false
	}
	if t.grp && (!c.hasGroup || c.group != t.group) {
		return false
	}
	return true
}

func (t *target) wantsSeries(s *seriesInfo) bool {
	return t.wantsClass(s.metric.classList[s.class])
}

// finisher computes a run's metrics from the collected chunks and the
// workers' series aggregates.
type finisher struct {
	run         *Run
	all         []*chunkResult
	st          []trendStat
	secs        float64
	aggs        []seriesAgg // by series id
	sketchMode  bool
	sketches    [][]*stats.Sketch // by metric idx, class (sketch mode)
	seriesOf    [][]*seriesInfo   // by metric idx
	perMetric   [][]*target       // by metric idx
	ths         [][]threshold     // by metric idx
	extra       [][]trendStat     // trend stats thresholds need beyond st
	fps         [][]uint64        // trend fingerprints by metric idx, class
	bins        [][]*binner       // trend samples by time, by metric idx, class
	conf        float64           // LoadOptions.IntervalConfidence
	independent bool              // LoadOptions.IndependentIntervals
}

func finish(run *Run, sh *shared, workers []*worker, all []*chunkResult, bins [][]*binner, statNames []string, parallel int) error {
	st, err := parseStats(statNames)
	if err != nil {
		return err
	}
	reg := sh.reg
	fi := &finisher{run: run, all: all, st: st, secs: run.Duration.Seconds(), sketchMode: sh.sketch.Load(), bins: bins, conf: sh.opts.IntervalConfidence, independent: sh.opts.IndependentIntervals}
	for _, row := range bins {
		for _, b := range row {
			if b != nil {
				run.HeldBytes += b.bytes()
			}
		}
	}
	fi.aggs = foldAggs(workers, len(reg.list))
	fi.fps = foldFingerprints(workers)
	if fi.sketchMode {
		fi.sketches = foldSketches(run, workers, all)
	} else {
		countExact(run, all)
	}
	fi.plan(reg)
	fi.ths, fi.extra = thresholdsOf(reg, st)
	if parallel <= 1 {
		var scratch []float64
		for _, m := range reg.mlist {
			fi.compute(m, &scratch)
		}
	} else {
		var wg sync.WaitGroup
		next := make(chan *metricInfo)
		for range parallel {
			wg.Go(func() {
				var scratch []float64
				for m := range next {
					fi.compute(m, &scratch)
				}
			})
		}
		for _, m := range reg.mlist {
			next <- m
		}
		close(next)
		wg.Wait()
	}
	fi.store(reg)
	return nil
}

// foldAggs folds the series aggregates of all workers.
func foldAggs(workers []*worker, n int) []seriesAgg {
	aggs := make([]seriesAgg, n)
	for _, w := range workers {
		for id := range w.aggs {
			a := &w.aggs[id]
			if a.n == 0 {
				continue
			}
			mergeAgg(&aggs[id], a)
		}
	}
	return aggs
}

// foldFingerprints adds up the workers' trend fingerprints.
func foldFingerprints(workers []*worker) [][]uint64 {
	var fps [][]uint64
	for _, w := range workers {
		for mi, row := range w.fps {
			for len(fps) <= mi {
				fps = append(fps, nil)
			}
			for ci, fp := range row {
				for len(fps[mi]) <= ci {
					fps[mi] = append(fps[mi], 0)
				}
				fps[mi][ci] += fp
			}
		}
	}
	return fps
}

// fingerprintOf is a trend view's fingerprint: its classes' summed.
func (fi *finisher) fingerprintOf(t *target) uint64 {
	m := t.m
	if m.idx >= len(fi.fps) {
		return 0
	}
	var fp uint64
	for ci, x := range fi.fps[m.idx] {
		if ci < len(m.classList) && t.wantsClass(m.classList[ci]) {
			fp += x
		}
	}
	return fp
}

// countExact records the trend samples held in exact mode.
func countExact(run *Run, all []*chunkResult) {
	for _, r := range all {
		if r == nil {
			continue
		}
		for _, o := range r.trends {
			if o != nil {
				run.TrendSamples += int64(len(o.vals))
				run.HeldBytes += int64(8*cap(o.vals) + 2*cap(o.cls))
			}
		}
	}
}

// plan lists the views to compute per metric: groups and sub-metrics
// first, the parent last (its exact samples are released as they are
// copied).
func (fi *finisher) plan(reg *registry) {
	run := fi.run
	var groups []string
	if run.GroupBy != "" {
		groups = reg.groupValues()
		run.Groups = map[string]map[string]*Metric{}
		for _, g := range groups {
			run.Groups[g] = map[string]*Metric{}
		}
	}
	fi.seriesOf = make([][]*seriesInfo, len(reg.mlist))
	for _, s := range reg.list {
		fi.seriesOf[s.metric.idx] = append(fi.seriesOf[s.metric.idx], s)
	}
	fi.perMetric = make([][]*target, len(reg.mlist))
	for _, m := range reg.mlist {
		var ts []*target
		add := func(name string, tags map[string]string, sub int, g string, grp bool) {
			ts = append(ts, &target{m: m, name: name, tags: tags, sub: sub, group: g, grp: grp})
		}
		for _, g := range groups {
			add(m.name, nil, -1, g, true)
			for i, s := range m.subs {
				add(s.Name, s.Tags, i, g, true)
			}
		}
		for i, s := range m.subs {
			add(s.Name, s.Tags, i, "", false)
		}
		add(m.name, nil, -1, "", false)
		fi.perMetric[m.idx] = ts
	}
}

// compute computes every view of m and evaluates the parent's thresholds.
func (fi *finisher) compute(m *metricInfo, scratch *[]float64) {
	for _, t := range fi.perMetric[m.idx] {
		tst := fi.st
		isParent := t.sub < 0 && !t.grp
		if isParent && len(fi.extra[m.idx]) > 0 {
			tst = append(slices.Clone(fi.st), fi.extra[m.idx]...)
		}
		t.result = fi.computeTarget(t, tst, scratch)
		if !isParent || t.result == nil || len(fi.ths[m.idx]) == 0 {
			continue
		}
		t.result.Thresholds = map[string]bool{}
		for _, th := range fi.ths[m.idx] {
			if ok, known := th.passed(t.result.Values); known {
				t.result.Thresholds[th.expr] = ok
			}
		}
		for _, x := range fi.extra[m.idx] {
			delete(t.result.Values, x.name)
		}
	}
}

// store places the computed views and the checks in the run.
func (fi *finisher) store(reg *registry) {
	run := fi.run
	for _, m := range reg.mlist {
		for _, t := range fi.perMetric[m.idx] {
			if t.result == nil {
				continue
			}
			if t.grp {
				run.Groups[t.group][t.name] = t.result
			} else {
				run.Metrics[t.name] = t.result
			}
		}
		if m.name == "checks" {
			for _, s := range fi.seriesOf[m.idx] {
				a := fi.aggs[s.id]
				if a.n == 0 {
					continue
				}
				name := s.tags["check"]
				addCheck(run, Check{Name: name, Path: s.tags["group"] + "::" + name, Passes: a.nonzero, Fails: a.n - a.nonzero})
			}
		}
	}
	// Empty groups (a value only seen outside the window) are dropped.
	for g, ms := range run.Groups {
		if len(ms) == 0 {
			delete(run.Groups, g)
		}
	}
}

func mergeAgg(dst, a *seriesAgg) {
	if dst.n == 0 || a.min < dst.min {
		dst.min = a.min
	}
	if dst.n == 0 || a.max > dst.max {
		dst.max = a.max
	}
	dst.n += a.n
	dst.sum += a.sum
	dst.nonzero += a.nonzero
	if a.lastLine >= dst.lastLine {
		dst.last, dst.lastLine = a.last, a.lastLine
	}
}

// computeTarget returns nil when the view has no samples, except for
// sub-metrics a Metric line declared (k6 lists those with zeros).
func (fi *finisher) computeTarget(t *target, st []trendStat, scratch *[]float64) *Metric {
	m := t.m
	out := newMetric(t.name, m.typ, m.contains, ModeExact)
	out.Parent = m.name
	if t.sub >= 0 {
		out.Tags = t.tags
	} else {
		out.Tags = nil
	}
	declared := t.sub >= 0 && t.sub != m.implicit && !t.grp
	switch {
	case m.typ != Trend:
		return fi.folded(t, out, declared)
	case fi.sketchMode:
		return fi.sketched(t, out, st, declared)
	}
	return fi.exact(t, out, st, declared, scratch)
}

// folded computes a counter, gauge or rate view from series aggregates.
func (fi *finisher) folded(t *target, out *Metric, declared bool) *Metric {
	out.Mode = ModeExact
	var acc seriesAgg
	for _, s := range fi.seriesOf[t.m.idx] {
		if t.wantsSeries(s) && fi.aggs[s.id].n > 0 {
			mergeAgg(&acc, &fi.aggs[s.id])
		}
	}
	if acc.n == 0 && !declared && (t.sub >= 0 || t.grp) {
		return nil
	}
	switch t.m.typ {
	case Counter:
		out.Values["count"] = acc.sum
		out.Values["rate"] = 0
		if fi.secs > 0 {
			out.Values["rate"] = acc.sum / fi.secs
		}
	case Gauge:
		out.Values["value"] = acc.last
		out.Values["min"] = acc.min
		out.Values["max"] = acc.max
	case Rate:
		out.Values["passes"] = float64(acc.nonzero)
		out.Values["fails"] = float64(acc.n - acc.nonzero)
		out.Values["rate"] = 0
		if acc.n > 0 {
			out.Values["rate"] = float64(acc.nonzero) / float64(acc.n)
		}
	}
	return out
}

// sketched computes a trend view from the merged sketches of its classes.
func (fi *finisher) sketched(t *target, out *Metric, st []trendStat, declared bool) *Metric {
	m := t.m
	out.Mode = ModeSketch
	var sk stats.Sketch
	if m.idx < len(fi.sketches) {
		for ci, s := range fi.sketches[m.idx] {
			if s != nil && t.wantsClass(m.classList[ci]) {
				sk.Merge(s)
			}
		}
	}
	if sk.Count() == 0 && !declared && (t.sub >= 0 || t.grp) {
		return nil
	}
	n := float64(sk.Count())
	out.Fingerprint = fi.fingerprintOf(t)
	iv := fi.intervals(t, st)
	for _, s := range st {
		if iv != nil && s.p > 0 && s.p < 1 {
			lo, hi, ok := sk.QuantileCI(s.p, fi.conf)
			iv.add(out, s, sk.Quantile(s.p), lo, hi, ok)
		}
		var v float64
		switch s.name {
		case "avg":
			if n > 0 {
				v = sk.Sum() / n
			}
		case "min":
			v = sk.Min()
		case "max":
			v = sk.Max()
		case "count":
			v = n
		default:
			v = sk.Quantile(s.p)
		}
		out.Values[s.name] = v
	}
	return out
}

// exact computes a trend view from its samples, gathered in file order.
func (fi *finisher) exact(t *target, out *Metric, st []trendStat, declared bool, scratch *[]float64) *Metric {
	parent := t.sub < 0 && !t.grp
	vals, sum := fi.gather(t, parent, scratch)
	if len(vals) == 0 && !declared && !parent {
		*scratch = vals
		return nil
	}
	slices.Sort(vals)
	n := len(vals)
	out.Fingerprint = fi.fingerprintOf(t)
	iv := fi.intervals(t, st)
	for _, s := range st {
		if iv != nil && s.p > 0 && s.p < 1 {
			lo, hi, ok := stats.QuantileCI(vals, s.p, fi.conf)
			iv.add(out, s, stats.Quantile(vals, s.p), lo, hi, ok)
		}
		var v float64
		switch s.name {
		case "avg":
			if n > 0 {
				v = sum / float64(n)
			}
		case "min":
			if n > 0 {
				v = vals[0]
			}
		case "max":
			if n > 0 {
				v = vals[n-1]
			}
		case "count":
			v = float64(n)
		default:
			v = stats.Quantile(vals, s.p)
		}
		out.Values[s.name] = v
	}
	if parent {
		*scratch = nil // the parent's copy is the big one: let it go
	} else {
		*scratch = vals
	}
	return out
}

// gather copies the view's samples in file order and sums them in the
// same order (k6's avg is a running sum). The parent takes every sample
// and releases the chunks' copies as it goes: it is computed last.
func (fi *finisher) gather(t *target, parent bool, scratch *[]float64) ([]float64, float64) {
	m := t.m
	var want []bool
	if !parent {
		want = make([]bool, len(m.classList))
		for ci, c := range m.classList {
			want[ci] = t.wantsClass(c)
		}
	}
	total := 0
	for _, r := range fi.all {
		if r != nil && m.idx < len(r.trends) && r.trends[m.idx] != nil {
			total += len(r.trends[m.idx].vals)
		}
	}
	vals := (*scratch)[:0]
	if parent || cap(vals) < total {
		vals = make([]float64, 0, total)
	}
	sum := 0.0
	for _, r := range fi.all {
		if r == nil || m.idx >= len(r.trends) || r.trends[m.idx] == nil {
			continue
		}
		o := r.trends[m.idx]
		if parent {
			for _, v := range o.vals {
				sum += v
			}
			vals = append(vals, o.vals...)
			r.trends[m.idx] = nil
			continue
		}
		for j, v := range o.vals {
			if want[o.cls[j]] {
				sum += v
				vals = append(vals, v)
			}
		}
	}
	return vals, sum
}

// viewIntervals gives a trend view's percentiles their intervals: the
// wider of the order-statistic interval, which holds for independent
// samples, and the interval from the view's batches over time, which
// holds when slow samples come in bursts (stats.BatchQuantileCI).
type viewIntervals struct {
	bins []*stats.Sketch
	conf float64
}

// intervals are the view's intervals, nil when none is asked for or the
// view has no percentile.
func (fi *finisher) intervals(t *target, st []trendStat) *viewIntervals {
	if !(fi.conf > 0) || !slices.ContainsFunc(st, func(s trendStat) bool { return s.p > 0 && s.p < 1 }) {
		return nil
	}
	iv := &viewIntervals{conf: fi.conf}
	if m := t.m; m.idx < len(fi.bins) && !fi.independent {
		iv.bins = binsOf(fi.bins[m.idx], func(ci int) bool { return ci < len(m.classList) && t.wantsClass(m.classList[ci]) })
	}
	return iv
}

// add records the interval of percentile s, q its value and [lo, hi]
// its order-statistic interval when ok.
func (iv *viewIntervals) add(out *Metric, s trendStat, q, lo, hi float64, ok bool) {
	if lo, hi, ok := stats.RunQuantileCI(lo, hi, ok, iv.bins, s.p, q, iv.conf); ok {
		out.addInterval(s.name, lo, hi)
	}
}

// addInterval records the interval of the trend stat name.
func (m *Metric) addInterval(name string, lo, hi float64) {
	if m.Intervals == nil {
		m.Intervals = map[string]Interval{}
	}
	m.Intervals[name] = Interval{Low: lo, High: hi}
}
