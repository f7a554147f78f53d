package k6

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// registry interns the series (metric + tag set) of a point stream. Workers
// keep their own cache of it, so the lock is taken once per new series.
type registry struct {
	mu      sync.Mutex
	series  map[string]*seriesInfo
	list    []*seriesInfo
	metrics map[string]*metricInfo
	mlist   []*metricInfo
	opts    *LoadOptions
	format  Format
}

type metricInfo struct {
	idx      int
	name     string
	typ      MetricType
	contains ValueType
	def      *MetricDef
	subs     []SubmetricDef
	implicit int // index in subs of the implicit expected_response:true, -1 if none
	// classes group series by which sub-metrics they feed and their
	// group-by value; trend samples carry their class id.
	classes   map[string]uint16
	classList []classInfo
	needsCls  bool
	// timeline: the samples also go to the run's Timeline
	// (http_req_duration's, and http_req_failed's for its failures).
	timeline bool
	// binned: the samples also go to time bins by class, for the
	// intervals' batches over time and the Timeline.
	binned bool
	// iterations: iteration_duration, whose samples tell when each
	// iteration started.
	iterations bool
}

type classInfo struct {
	bits     uint64 // bit i: feeds subs[i]
	group    string
	hasGroup bool
}

type seriesInfo struct {
	id     int
	metric *metricInfo
	tags   map[string]string
	class  uint16
}

func newRegistry(f Format, opts *LoadOptions) *registry {
	return &registry{series: map[string]*seriesInfo{}, metrics: map[string]*metricInfo{}, opts: opts, format: f}
}

// implicitSub is the sub-metric k6 always creates.
const implicitSub = "http_req_duration{expected_response:true}"

// metricFor finds or creates a metric's info; the caller holds mu.
func (r *registry) metricFor(name string, defs map[string]*MetricDef) (*metricInfo, error) {
	if m, ok := r.metrics[name]; ok {
		return m, nil
	}
	m := &metricInfo{idx: len(r.mlist), name: name, implicit: -1, classes: map[string]uint16{}}
	if d := defs[name]; d != nil {
		m.def, m.typ, m.contains = d, d.Type, d.Contains
		m.subs = append(m.subs, d.Submetrics...)
	} else if d, ok := r.opts.Types[name]; ok {
		m.typ, m.contains = d.Type, d.Contains
		m.subs = append(m.subs, d.Submetrics...)
	} else if t, c, ok := Builtin(name); ok {
		m.typ, m.contains = t, c
	} else if r.format == FormatCSV {
		// CSV carries no types: an unknown metric is read as a trend, so
		// every statistic (count, avg, percentiles) is available.
		m.typ, m.contains = Trend, Default
	} else {
		return nil, errf("metric", "%q has no Metric line before its first Point", truncate(name, 60))
	}
	for _, s := range r.opts.Submetrics {
		parent, tags := SplitName(s)
		if parent == name && !hasSub(m.subs, s) {
			m.subs = append(m.subs, SubmetricDef{Name: s, Suffix: s[len(parent)+1 : len(s)-1], Tags: tags})
		}
	}
	if name == HTTPReqDuration && !hasSub(m.subs, implicitSub) {
		m.implicit = len(m.subs)
		m.subs = append(m.subs, SubmetricDef{Name: implicitSub, Suffix: "expected_response:true", Tags: map[string]string{"expected_response": "true"}})
	}
	if len(m.subs) > 64 {
		return nil, fmt.Errorf("metric %q has %d sub-metrics; at most 64 are supported", name, len(m.subs))
	}
	m.needsCls = m.typ == Trend && (len(m.subs) > 0 || r.opts.GroupBy != "")
	m.timeline = r.opts.Timeline && (name == HTTPReqDuration || name == HTTPReqFailed)
	m.binned = m.typ == Trend && (m.timeline || r.opts.IntervalConfidence > 0)
	m.iterations = name == "iteration_duration" && m.typ == Trend && m.contains == Time
	r.metrics[name] = m
	r.mlist = append(r.mlist, m)
	return m, nil
}

func hasSub(subs []SubmetricDef, name string) bool {
	for _, s := range subs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// get finds or creates the series of key; decode fills tags on creation.
func (r *registry) get(key string, metric string, defs map[string]*MetricDef, decode func(map[string]string) error) (*seriesInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.series[key]; ok {
		return s, nil
	}
	m, err := r.metricFor(metric, defs)
	if err != nil {
		return nil, err
	}
	tags := map[string]string{}
	if err := decode(tags); err != nil {
		return nil, err
	}
	var ci classInfo
	for i, sub := range m.subs {
		if matches(tags, sub.Tags) {
			ci.bits |= 1 << i
		}
	}
	if g := r.opts.GroupBy; g != "" {
		ci.group, ci.hasGroup = tags[g]
	}
	ck := fmt.Sprintf("%x\x00%t\x00%s", ci.bits, ci.hasGroup, ci.group)
	id, ok := m.classes[ck]
	if !ok {
		if len(m.classList) >= 1<<16 {
			return nil, fmt.Errorf("metric %q: more than 65536 distinct sub-metric/group combinations", metric)
		}
		id = uint16(len(m.classList))
		m.classes[ck] = id
		m.classList = append(m.classList, ci)
	}
	s := &seriesInfo{id: len(r.list), metric: m, tags: tags, class: id}
	r.series[strings.Clone(key)] = s
	r.list = append(r.list, s)
	return s, nil
}

func matches(tags, sel map[string]string) bool {
	for k, v := range sel {
		if tags[k] != v {
			return false
		}
		if _, ok := tags[k]; !ok {
			return false
		}
	}
	return true
}

// groupValues lists the distinct values of the group-by tag, sorted.
func (r *registry) groupValues() []string {
	seen := map[string]bool{}
	for _, m := range r.mlist {
		for _, c := range m.classList {
			if c.hasGroup {
				seen[c.group] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for g := range seen {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

// MaxTagValues bounds how many values Run.TagValues keeps of one tag.
const MaxTagValues = 16

// tagValues are the values each tag takes over the registered series,
// sorted, at most MaxTagValues a tag (the smallest).
func (r *registry) tagValues() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]map[string]bool{}
	for _, s := range r.list {
		for k, v := range s.tags {
			if seen[k] == nil {
				seen[k] = map[string]bool{}
			}
			seen[k][v] = true
		}
	}
	out := make(map[string][]string, len(seen))
	for k, vs := range seen {
		all := make([]string, 0, len(vs))
		for v := range vs {
			all = append(all, v)
		}
		sort.Strings(all)
		out[k] = all[:min(len(all), MaxTagValues)]
	}
	return out
}
