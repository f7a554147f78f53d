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

func finish(run *Run, sh *shared, workers []*worker, all []*chunkResult, statNames []string, parallel int) error {
	st, err := parseStats(statNames)
	if err != nil {
		return err
	}
	reg := sh.reg
	// Fold series aggregates of all workers.
	aggs := make([]seriesAgg, len(reg.list))
	for _, w := range workers {
		for id := range w.aggs {
			a := &w.aggs[id]
			if a.n == 0 {
				continue
			}
			mergeAgg(&aggs[id], a)
		}
	}
	sketchMode := sh.sketch.Load()
	var sketches [][]*stats.Sketch
	if sketchMode {
		run.Mode = ModeSketch
		for _, w := range workers {
			for mi, row := range w.sketches {
				for len(sketches) <= mi {
					sketches = append(sketches, nil)
				}
				for ci, sk := range row {
					if sk == nil {
						continue
					}
					for len(sketches[mi]) <= ci {
						sketches[mi] = append(sketches[mi], nil)
					}
					if sketches[mi][ci] == nil {
						sketches[mi][ci] = &stats.Sketch{}
					}
					sketches[mi][ci].Merge(sk)
				}
			}
		}
		sketches = foldToSketch(all, sketches)
		for _, row := range sketches {
			for _, sk := range row {
				if sk != nil {
					run.TrendSamples += int64(sk.Count())
					run.HeldBytes += int64(sk.Bytes())
				}
			}
		}
		for _, w := range workers {
			for _, row := range w.sketches {
				for _, sk := range row {
					if sk != nil {
						run.HeldBytes += int64(sk.Bytes())
					}
				}
			}
		}
	} else {
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

	groups := []string(nil)
	if run.GroupBy != "" {
		groups = reg.groupValues()
		run.Groups = map[string]map[string]*Metric{}
		for _, g := range groups {
			run.Groups[g] = map[string]*Metric{}
		}
	}
	// Targets per metric: sub-metrics and groups first, the parent last
	// (its exact samples are released as they are copied).
	seriesOf := make([][]*seriesInfo, len(reg.mlist))
	for _, s := range reg.list {
		seriesOf[s.metric.idx] = append(seriesOf[s.metric.idx], s)
	}
	perMetric := make([][]*target, len(reg.mlist))
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
		perMetric[m.idx] = ts
	}
	secs := run.Duration.Seconds()
	// Thresholds from NDJSON Metric lines are evaluated on the metric
	// itself (k6 writes no sub-metric thresholds there); a trend stat they
	// need beyond --stats is computed, then dropped from the values.
	ths := make([][]threshold, len(reg.mlist))
	extra := make([][]trendStat, len(reg.mlist))
	for _, m := range reg.mlist {
		if m.def == nil {
			continue
		}
		for _, e := range m.def.Thresholds {
			th, err := parseThreshold(e)
			if err != nil {
				continue // k6 refused it already; nothing to report
			}
			ths[m.idx] = append(ths[m.idx], th)
			if m.typ == Trend && !slices.ContainsFunc(st, func(s trendStat) bool { return s.name == th.stat }) &&
				!slices.ContainsFunc(extra[m.idx], func(s trendStat) bool { return s.name == th.stat }) {
				if ts, err := parseStats([]string{th.stat}); err == nil {
					extra[m.idx] = append(extra[m.idx], ts[0])
				}
			}
		}
	}
	compute := func(m *metricInfo, scratch *[]float64) {
		for _, t := range perMetric[m.idx] {
			tst := st
			isParent := t.sub < 0 && !t.grp
			if isParent && len(extra[m.idx]) > 0 {
				tst = append(slices.Clone(st), extra[m.idx]...)
			}
			t.result = computeTarget(t, seriesOf[m.idx], aggs, all, sketches, tst, secs, scratch, sketchMode)
			if !isParent || t.result == nil || len(ths[m.idx]) == 0 {
				continue
			}
			t.result.Thresholds = map[string]bool{}
			for _, th := range ths[m.idx] {
				if ok, known := th.passed(t.result.Values); known {
					t.result.Thresholds[th.expr] = ok
				}
			}
			for _, x := range extra[m.idx] {
				delete(t.result.Values, x.name)
			}
		}
	}
	if parallel <= 1 {
		var scratch []float64
		for _, m := range reg.mlist {
			compute(m, &scratch)
		}
	} else {
		var wg sync.WaitGroup
		next := make(chan *metricInfo)
		for range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var scratch []float64
				for m := range next {
					compute(m, &scratch)
				}
			}()
		}
		for _, m := range reg.mlist {
			next <- m
		}
		close(next)
		wg.Wait()
	}

	for _, m := range reg.mlist {
		for _, t := range perMetric[m.idx] {
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
			for _, s := range seriesOf[m.idx] {
				a := aggs[s.id]
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
	return nil
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
func computeTarget(t *target, series []*seriesInfo, aggs []seriesAgg, all []*chunkResult, sketches [][]*stats.Sketch, st []trendStat, secs float64, scratch *[]float64, sketchMode bool) *Metric {
	m := t.m
	out := newMetric(t.name, m.typ, m.contains, ModeExact)
	out.Parent = m.name
	if t.sub >= 0 {
		out.Tags = t.tags
	} else {
		out.Tags = nil
	}
	declared := t.sub >= 0 && t.sub != m.implicit && !t.grp
	if m.typ != Trend {
		out.Mode = ModeExact
		var acc seriesAgg
		for _, s := range series {
			if t.wantsSeries(s) && aggs[s.id].n > 0 {
				mergeAgg(&acc, &aggs[s.id])
			}
		}
		if acc.n == 0 && !declared && !(t.sub < 0 && !t.grp) {
			return nil
		}
		switch m.typ {
		case Counter:
			out.Values["count"] = acc.sum
			out.Values["rate"] = 0
			if secs > 0 {
				out.Values["rate"] = acc.sum / secs
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
	if sketchMode {
		out.Mode = ModeSketch
		var sk stats.Sketch
		if m.idx < len(sketches) {
			for ci, s := range sketches[m.idx] {
				if s != nil && t.wantsClass(m.classList[ci]) {
					sk.Merge(s)
				}
			}
		}
		if sk.Count() == 0 && !declared && (t.sub >= 0 || t.grp) {
			return nil
		}
		n := float64(sk.Count())
		for _, s := range st {
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
	// Exact: gather this view's samples in file order.
	parent := t.sub < 0 && !t.grp
	var want []bool
	if !parent {
		want = make([]bool, len(m.classList))
		for ci, c := range m.classList {
			want[ci] = t.wantsClass(c)
		}
	}
	total := 0
	for _, r := range all {
		if r != nil && m.idx < len(r.trends) && r.trends[m.idx] != nil {
			total += len(r.trends[m.idx].vals)
		}
	}
	vals := (*scratch)[:0]
	if parent {
		vals = make([]float64, 0, total)
	} else if cap(vals) < total {
		vals = make([]float64, 0, total)
	}
	sum := 0.0
	for _, r := range all {
		if r == nil || m.idx >= len(r.trends) || r.trends[m.idx] == nil {
			continue
		}
		o := r.trends[m.idx]
		if parent {
			for _, v := range o.vals {
				sum += v
			}
			vals = append(vals, o.vals...)
			r.trends[m.idx] = nil // release as we go: the parent is last
			continue
		}
		for j, v := range o.vals {
			if want[o.cls[j]] {
				sum += v
				vals = append(vals, v)
			}
		}
	}
	if len(vals) == 0 && !declared && !parent {
		*scratch = vals
		return nil
	}
	slices.Sort(vals)
	n := len(vals)
	for _, s := range st {
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
