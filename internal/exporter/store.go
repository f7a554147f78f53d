package exporter

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// family is one k6 metric exposed as one Prometheus metric family.
type family struct {
	k6name     string
	typ        k6.MetricType
	contains   k6.ValueType
	labels     []string // k6 tag keys, in label order (condition excluded)
	scale      float64  // k6 unit to base unit (ms to s)
	bounds     []float64
	desc       *prometheus.Desc
	name       string // Prometheus series name
	help       string
	promLabels []string
	boundPtrs  []*float64 // shared UpperBound pointers of the classic buckets
	sortOrder  []int      // indexes of labels in label-name order, as registries sort

	mu      sync.RWMutex
	series  map[string]*series
	dead    bool  // removed from the store (expired); f.mu guards it
	touched int64 // store clock at definition, for expiry of an empty family
}

// series is one label set of a family. Counters and gauges keep their
// value as float64 bits for lock-free updates; rates keep two counts;
// trends a histogram. Its label bytes are held once, in key: the values
// and label pairs are substrings of it.
type series struct {
	key     string              // label values in label order, each ended by 0xff (never in UTF-8)
	values  []string            // substrings of key
	pairs   [2][]*dto.LabelPair // sorted label pairs; rates: [0] zero, [1] nonzero
	bits    atomic.Uint64       // counter or gauge value
	zero    atomic.Uint64       // rate samples equal to zero
	nonzero atomic.Uint64       // rate samples not zero
	h       *hist
	created time.Time
	run     *run
}

// addFloat adds d to a counter; false (nothing added) when the total
// would no longer be finite.
func (s *series) addFloat(d float64) bool {
	for {
		old := s.bits.Load()
		v := math.Float64frombits(old) + d
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return false
		}
		if s.bits.CompareAndSwap(old, math.Float64bits(v)) {
			return true
		}
	}
}

// addCount adds n to a rate count; false (nothing added) on overflow.
func addCount(a *atomic.Uint64, n uint64) bool {
	for {
		old := a.Load()
		if old+n < old {
			return false
		}
		if a.CompareAndSwap(old, old+n) {
			return true
		}
	}
}

// run is one k6 test run: every label set sharing a testid value. Its
// series expire together a TTL after its last point.
type run struct {
	testid string
	last   atomic.Int64 // store clock (unix ns) at its latest point
	dead   atomic.Bool  // expired or deleted: its series are being removed
	pinned atomic.Bool  // replayed from result files: no TTL, only deletion
}

// store holds every k6 series. Families are created from Metric lines,
// OTLP data or the built-in table; series are created on first sample up
// to the series limit.
type store struct {
	allow       []string // extra tags allowed as labels
	limit       int      // series; 0 = none
	metricLimit int      // families; 0 = none
	maxLabel    int      // bytes of a label value; 0 = none
	labelLimit  int64    // label bytes of all series (their keys); 0 = none
	labelBytes  atomic.Int64
	native      *nativeLimit
	envs        []*envelope.Envelope
	now         func() time.Time
	nseries     atomic.Int64
	clock       atomic.Int64 // unix ns, advanced by expire: stamps runs cheaply

	mu       sync.RWMutex
	families map[string]*family
	names    map[string]string // Prometheus series name -> k6 name

	runMu sync.Mutex
	runs  map[string]*run // by testid
}

// Overflow reasons: what limit a dropped sample met.
const (
	OverflowSeries  = "series"  // --k6.series-limit
	OverflowMetrics = "metrics" // --k6.metric-limit
	OverflowStreams = "streams" // --otlp.stream-limit
	// OverflowLabelBytes: a new series whose label values would take the
	// store past --k6.label-bytes-limit.
	OverflowLabelBytes = "label_bytes"
)

func newStore(allow []string, limit int, envs []*envelope.Envelope) *store {
	st := &store{allow: allow, limit: limit, envs: envs, now: time.Now, families: map[string]*family{},
		names: map[string]string{}, runs: map[string]*run{}, native: &nativeLimit{}}
	st.clock.Store(st.now().UnixNano())
	return st
}

// Errors of samples the store refuses; badReason names their
// bad_lines_total reason. Limit errors are overflow refusals
// (*otlp.Refusal). The store counts nothing: its callers report each
// refusal to Server.refuse.
var (
	// errUnknownMetric is returned for a sample of a metric with no Metric
	// line and no built-in type.
	errUnknownMetric = fmt.Errorf("metric has no Metric line and is not a k6 built-in")
	errInvalidUTF8   = errors.New("not valid UTF-8")
	errBadName       = fmt.Errorf("metric name longer than %d bytes", maxMetricName)
	errNameClash     = errors.New("metric name maps onto the series name of another k6 metric")
	errLabelTooLong  = errors.New("label value too long")
	errOverflow      = errors.New("not a finite number or a count beyond 2^64 once added")
	errFamilyGone    = errors.New("metric expired while in use")
)

// maxMetricName bounds a k6 metric name (k6 allows 128 characters).
const maxMetricName = 256

// badReason is the bad_lines_total reason of a store error.
func badReason(err error) string {
	switch {
	case errors.Is(err, errUnknownMetric):
		return "unknown_metric"
	case errors.Is(err, errInvalidUTF8):
		return "invalid_utf8"
	case errors.Is(err, errBadName), errors.Is(err, errNameClash):
		return "bad_name"
	case errors.Is(err, errLabelTooLong):
		return "label_too_long"
	case errors.Is(err, errOverflow):
		return "overflow"
	}
	return "bad_value"
}

// define registers a metric's type, keeping the first definition: k6
// never changes a metric's type within a run. It refuses names that are
// not valid UTF-8, too long, or would share a series name with another
// metric (both would render as one family and break the page), and new
// metrics past the metric limit.
func (st *store) define(name string, typ k6.MetricType, contains k6.ValueType) (*family, error) {
	st.mu.RLock()
	f := st.families[name]
	st.mu.RUnlock()
	if f != nil {
		return f, nil
	}
	switch {
	case !utf8.ValidString(name):
		return nil, fmt.Errorf("metric %q: %w", strings.ToValidUTF8(name, "\uFFFD"), errInvalidUTF8)
	case len(name) > maxMetricName:
		return nil, fmt.Errorf("metric %q...: %w", name[:32], errBadName)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if f = st.families[name]; f != nil {
		return f, nil
	}
	if st.metricLimit > 0 && len(st.families) >= st.metricLimit {
		return nil, otlp.Overflow(OverflowMetrics, fmt.Errorf("metric %q: over the limit of %d k6 metrics", name, st.metricLimit))
	}
	f = st.newFamily(name, typ, contains)
	if other, ok := st.names[f.name]; ok {
		return nil, fmt.Errorf("metric %q: %w (%q, %s)", name, errNameClash, other, f.name)
	}
	f.touched = st.clock.Load()
	st.families[name] = f
	st.names[f.name] = name
	return f, nil
}

// lookup returns the family of name, typing built-ins on first use.
func (st *store) lookup(name string) (*family, error) {
	st.mu.RLock()
	f := st.families[name]
	st.mu.RUnlock()
	if f != nil {
		return f, nil
	}
	// k6's built-ins are typed for inputs that carry no Metric line (a
	// stream joined midway, OTLP without units).
	if typ, contains, ok := k6.Builtin(name); ok {
		return st.define(name, typ, contains)
	}
	return nil, errUnknownMetric
}

// checkTags vets the label values of a sample: invalid UTF-8 is replaced
// by U+FFFD (fixed true), as one invalid byte in a label value makes
// Prometheus reject the whole page; then a value longer than the limit,
// as it would be stored, is an error.
func (st *store) checkTags(f *family, tags map[string]string) (map[string]string, bool, error) {
	fixed := false
	for _, l := range f.labels {
		if !utf8.ValidString(tags[l]) {
			fixed = true
			break
		}
	}
	if fixed {
		repaired := make(map[string]string, len(tags))
		for k, v := range tags {
			repaired[k] = strings.ToValidUTF8(v, "\uFFFD")
		}
		tags = repaired
	}
	for _, l := range f.labels {
		if v := tags[l]; st.maxLabel > 0 && len(v) > st.maxLabel {
			return tags, false, fmt.Errorf("tag %s: %d bytes, over %d: %w", l, len(v), st.maxLabel, errLabelTooLong)
		}
	}
	return tags, fixed, nil
}

// seriesFor finds (or creates) the series of a sample of metric name,
// after checkTags; fixed reports replaced invalid UTF-8. pin exempts the
// sample's run from the TTL (finished results replayed at start-up).
func (st *store) seriesFor(name string, buf []byte, tags map[string]string, pin bool) (f *family, s *series, _ []byte, fixed bool, err error) {
	for range 2 { // a family expired under us is looked up again
		if f, err = st.lookup(name); err != nil {
			return nil, nil, buf, false, err
		}
		// A series found by its key was vetted when it was created: the
		// tags that give its key bytes are the same valid strings.
		if s, buf = st.find(f, buf, tags); s == nil {
			if tags, fixed, err = st.checkTags(f, tags); err != nil {
				return f, nil, buf, false, err
			}
			s, buf, err = st.get(f, buf, tags)
		}
		if !errors.Is(err, errFamilyGone) {
			if pin && s != nil && !s.run.pinned.Load() {
				s.run.pinned.Store(true)
			}
			return f, s, buf, fixed, err
		}
	}
	return f, nil, buf, fixed, err
}

// runOf returns the run of testid, creating it; st.runMu not held.
func (st *store) runOf(testid string) *run {
	st.runMu.Lock()
	defer st.runMu.Unlock()
	r := st.runs[testid]
	if r == nil {
		r = &run{testid: testid}
		st.runs[testid] = r
	}
	r.last.Store(max(st.clock.Load(), r.last.Load()))
	return r
}

// expire removes the runs whose last point is older than ttl at now (and
// metrics left with no series that were defined before then); it
// returns the series removed. It also advances the clock runs are
// stamped with.
func (st *store) expire(now time.Time, ttl time.Duration) int {
	st.clock.Store(now.UnixNano())
	cutoff := now.Add(-ttl).UnixNano()
	st.runMu.Lock()
	n := 0
	for id, r := range st.runs {
		if r.last.Load() < cutoff && !r.pinned.Load() {
			r.dead.Store(true)
			delete(st.runs, id)
			n++
		}
	}
	st.runMu.Unlock()
	removed := 0
	if n > 0 {
		removed = st.removeDead()
	}
	st.mu.Lock()
	for name, f := range st.families {
		f.mu.Lock()
		if len(f.series) == 0 && f.touched < cutoff {
			f.dead = true
			delete(st.families, name)
			delete(st.names, f.name)
		}
		f.mu.Unlock()
	}
	st.mu.Unlock()
	return removed
}

// deleteRun removes every series of testid at once; it returns how many
// (0: no such run).
func (st *store) deleteRun(testid string) int {
	st.runMu.Lock()
	r := st.runs[testid]
	if r != nil {
		r.dead.Store(true)
		delete(st.runs, testid)
	}
	st.runMu.Unlock()
	if r == nil {
		return 0
	}
	return st.removeDead()
}

// removeDead deletes the series of dead runs.
func (st *store) removeDead() int {
	removed := 0
	for _, f := range st.sortedFamilies() {
		f.mu.Lock()
		for k, s := range f.series {
			if s.run.dead.Load() {
				delete(f.series, k)
				if s.h != nil {
					s.h.release()
				}
				st.labelBytes.Add(-int64(len(s.key)))
				removed++
			}
		}
		f.mu.Unlock()
	}
	st.nseries.Add(-int64(removed))
	return removed
}

func (st *store) newFamily(name string, typ k6.MetricType, contains k6.ValueType) *family {
	f := &family{k6name: name, typ: typ, contains: contains, scale: 1, series: map[string]*series{}}
	if contains == k6.Time {
		f.scale = 1.0 / 1000
	}
	seriesName := catalogue.SeriesName(name, string(typ), string(contains))
	base := labelsFor(seriesName)
	f.labels = append(slices.Clone(base), st.allow...)
	f.labels = dedupe(f.labels)
	promLabels := slices.Clone(f.labels)
	if typ == k6.Rate {
		promLabels = append(promLabels, catalogue.ConditionLabel)
	}
	help := fmt.Sprintf("k6 %s metric %s", typ, name)
	if d, ok := catalogue.Lookup(seriesName); ok {
		help = d.Help
	} else {
		switch contains {
		case k6.Time:
			help += " (k6 milliseconds, exposed in seconds)."
		case k6.Data:
			help += " (bytes)."
		default:
			help += "."
		}
	}
	f.desc = prometheus.NewDesc(seriesName, help, promLabels, nil)
	f.sortOrder = make([]int, len(f.labels))
	for i := range f.sortOrder {
		f.sortOrder[i] = i
	}
	sort.Slice(f.sortOrder, func(i, j int) bool { return f.labels[f.sortOrder[i]] < f.labels[f.sortOrder[j]] })
	f.name, f.help, f.promLabels = seriesName, help, promLabels
	if typ == k6.Trend {
		f.bounds = classicBuckets(st.envs, name, contains)
		f.boundPtrs = make([]*float64, len(f.bounds))
		for i := range f.bounds {
			f.boundPtrs[i] = &f.bounds[i]
		}
	}
	return f
}

// labelsFor is the catalogue's label set for a series (minus condition,
// which the store adds for rates), or the default k6 labels.
func labelsFor(seriesName string) []string {
	if d, ok := catalogue.Lookup(seriesName); ok && len(d.Labels) > 0 {
		return slices.DeleteFunc(slices.Clone(d.Labels), func(l string) bool { return l == catalogue.ConditionLabel })
	}
	return catalogue.DefaultK6Labels()
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, v := range s {
		if !seen[v] && v != "" {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// key builds the series key of tags into buf; lookups with string(buf)
// do not allocate.
func (f *family) key(buf []byte, tags map[string]string) []byte {
	buf = buf[:0]
	for _, l := range f.labels {
		buf = append(buf, tags[l]...)
		buf = append(buf, 0xff)
	}
	return buf
}

// find returns the existing series for tags, stamping its run as seen,
// or nil; buf holds the key either way.
func (st *store) find(f *family, buf []byte, tags map[string]string) (*series, []byte) {
	buf = f.key(buf, tags)
	f.mu.RLock()
	s := f.series[string(buf)]
	f.mu.RUnlock()
	if s != nil {
		if c := st.clock.Load(); c > s.run.last.Load() {
			s.run.last.Store(c)
		}
	}
	return s, buf
}

// get returns the series for tags, creating it unless the store is full
// (an overflow refusal) or f has expired
// (errFamilyGone). Tags must have passed checkTags.
func (st *store) get(f *family, buf []byte, tags map[string]string) (*series, []byte, error) {
	s, buf := st.find(f, buf, tags)
	if s != nil {
		return s, buf, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead {
		return nil, buf, errFamilyGone
	}
	if s = f.series[string(buf)]; s != nil {
		return s, buf, nil
	}
	if st.limit > 0 && st.nseries.Load() >= int64(st.limit) {
		return nil, buf, otlp.Overflow(OverflowSeries, fmt.Errorf("over the limit of %d k6 series", st.limit))
	}
	n := int64(len(buf))
	if used := st.labelBytes.Add(n); st.labelLimit > 0 && used > st.labelLimit {
		st.labelBytes.Add(-n)
		return nil, buf, otlp.Overflow(OverflowLabelBytes, fmt.Errorf("a series of %d label bytes: over the limit of %d label bytes", n, st.labelLimit))
	}
	key := string(buf)
	values := make([]string, 0, len(f.labels))
	for rest := key; len(rest) > 0; {
		i := strings.IndexByte(rest, 0xff)
		values = append(values, rest[:i])
		rest = rest[i+1:]
	}
	s = &series{key: key, values: values, created: st.now(), run: st.runOf(tags["testid"])}
	s.pairs[0] = f.labelPairs(values, catalogue.ConditionZero)
	if f.typ == k6.Rate {
		s.pairs[1] = f.labelPairs(values, catalogue.ConditionNonzero)
	}
	if f.typ == k6.Trend {
		s.h = newHist(f.bounds, s.created, st.native)
	}
	f.series[key] = s
	st.nseries.Add(1)
	return s, buf, nil
}

// sample applies one k6 sample: a counter increment, a gauge value, a
// rate sample (0 or not) or a trend observation, in k6 units. It
// refuses (errOverflow) a sample that would make a figure infinite or
// wrap a count.
func (st *store) sample(f *family, s *series, v float64) error {
	ok := true
	switch f.typ {
	case k6.Counter:
		ok = s.addFloat(v)
	case k6.Gauge:
		s.bits.Store(math.Float64bits(v))
	case k6.Rate:
		if v != 0 {
			ok = addCount(&s.nonzero, 1)
		} else {
			ok = addCount(&s.zero, 1)
		}
	default:
		x := v * f.scale
		ok = s.h.observe(x, 1, x)
	}
	if !ok {
		return errOverflow
	}
	return nil
}

// labelPairs builds a series' sorted label pairs once; scrapes share them.
func (f *family) labelPairs(values []string, cond string) []*dto.LabelPair {
	pairs := make([]*dto.LabelPair, 0, len(f.promLabels))
	for i, l := range f.promLabels {
		v := cond
		if i < len(values) {
			v = values[i]
		}
		pairs = append(pairs, &dto.LabelPair{Name: ptr(l), Value: ptr(v)})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].GetName() < pairs[j].GetName() })
	return pairs
}

// snapshot lists a family's series in key order.
func (f *family) snapshot() []*series {
	f.mu.RLock()
	list := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		list = append(list, s)
	}
	f.mu.RUnlock()
	sort.Slice(list, func(i, j int) bool { return f.less(list[i], list[j]) })
	return list
}

// less orders series as registries do: by label values in label-name
// order.
func (f *family) less(a, b *series) bool {
	for _, i := range f.sortOrder {
		if a.values[i] != b.values[i] {
			return a.values[i] < b.values[i]
		}
	}
	return false
}

// write renders one series (for rates, one condition: 0 zero, 1 nonzero).
func (f *family) write(s *series, cond int, out *dto.Metric) {
	out.Label = s.pairs[cond]
	switch f.typ {
	case k6.Counter:
		out.Counter = &dto.Counter{Value: ptr(math.Float64frombits(s.bits.Load())), CreatedTimestamp: ts(s.created)}
	case k6.Gauge:
		out.Gauge = &dto.Gauge{Value: ptr(math.Float64frombits(s.bits.Load()))}
	case k6.Rate:
		n := s.zero.Load()
		if cond == 1 {
			n = s.nonzero.Load()
		}
		out.Counter = &dto.Counter{Value: ptr(float64(n)), CreatedTimestamp: ts(s.created)}
	default:
		out.Histogram = &dto.Histogram{}
		s.h.write(out.Histogram, f.boundPtrs)
	}
}

// metricFamily renders a family straight to its protobuf form: the
// scrape path, which skips the registry's per-metric checks (the store
// guarantees unique, consistent label sets).
func (f *family) metricFamily() *dto.MetricFamily {
	list := f.snapshot()
	if len(list) == 0 {
		return nil
	}
	mf := &dto.MetricFamily{Name: ptr(f.name), Help: ptr(f.help)}
	conds := 1
	switch f.typ {
	case k6.Counter:
		mf.Type = dto.MetricType_COUNTER.Enum()
	case k6.Rate:
		mf.Type = dto.MetricType_COUNTER.Enum()
		conds = 2
	case k6.Gauge:
		mf.Type = dto.MetricType_GAUGE.Enum()
	default:
		mf.Type = dto.MetricType_HISTOGRAM.Enum()
	}
	ms := make([]dto.Metric, len(list)*conds)
	mf.Metric = make([]*dto.Metric, 0, len(ms))
	for i, s := range list {
		for c := conds - 1; c >= 0; c-- { // "nonzero" sorts before "zero"
			m := &ms[i*conds+(conds-1-c)]
			cond := c
			if conds == 1 {
				cond = 0
			}
			f.write(s, cond, m)
			mf.Metric = append(mf.Metric, m)
		}
	}
	if conds == 2 {
		// The condition label takes its place among the others, as a
		// registry orders metrics: by label values in label-name order.
		sort.SliceStable(mf.Metric, func(i, j int) bool {
			a, b := mf.Metric[i].Label, mf.Metric[j].Label
			for k := range a {
				if a[k].GetValue() != b[k].GetValue() {
					return a[k].GetValue() < b[k].GetValue()
				}
			}
			return false
		})
	}
	return mf
}

// gather renders every family, sorted by name.
func (st *store) gather() []*dto.MetricFamily {
	var out []*dto.MetricFamily
	for _, f := range st.sortedFamilies() {
		if mf := f.metricFamily(); mf != nil {
			out = append(out, mf)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// sortedFamilies lists families by k6 name (for tests and the OTel push).
func (st *store) sortedFamilies() []*family {
	st.mu.RLock()
	defer st.mu.RUnlock()
	out := make([]*family, 0, len(st.families))
	for _, f := range st.families {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].k6name < out[j].k6name })
	return out
}
