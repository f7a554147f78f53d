package exporter

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
)

// builtins types k6's built-in metrics for inputs that carry no Metric
// line (a stream joined midway, OTLP without units).
var builtins = map[string]struct {
	typ      k6.MetricType
	contains k6.ValueType
}{
	"vus": {k6.Gauge, k6.Default}, "vus_max": {k6.Gauge, k6.Default},
	"iterations": {k6.Counter, k6.Default}, "iteration_duration": {k6.Trend, k6.Time},
	"dropped_iterations": {k6.Counter, k6.Default}, "checks": {k6.Rate, k6.Default},
	"group_duration": {k6.Trend, k6.Time}, "data_sent": {k6.Counter, k6.Data},
	"data_received": {k6.Counter, k6.Data}, "http_reqs": {k6.Counter, k6.Default},
	"http_req_failed": {k6.Rate, k6.Default}, "http_req_duration": {k6.Trend, k6.Time},
	"http_req_blocked": {k6.Trend, k6.Time}, "http_req_connecting": {k6.Trend, k6.Time},
	"http_req_tls_handshaking": {k6.Trend, k6.Time}, "http_req_sending": {k6.Trend, k6.Time},
	"http_req_waiting": {k6.Trend, k6.Time}, "http_req_receiving": {k6.Trend, k6.Time},
	"ws_sessions": {k6.Counter, k6.Default}, "ws_msgs_sent": {k6.Counter, k6.Default},
	"ws_msgs_received": {k6.Counter, k6.Default}, "ws_ping": {k6.Trend, k6.Time},
	"ws_session_duration": {k6.Trend, k6.Time}, "ws_connecting": {k6.Trend, k6.Time},
	"grpc_req_duration": {k6.Trend, k6.Time}, "grpc_streams": {k6.Counter, k6.Default},
	"grpc_streams_msgs_sent": {k6.Counter, k6.Default}, "grpc_streams_msgs_received": {k6.Counter, k6.Default},
}

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

	mu     sync.RWMutex
	series map[string]*series
}

// series is one label set of a family. Counters and gauges keep their
// value as float64 bits for lock-free updates; rates keep two counts;
// trends a histogram.
type series struct {
	key     string
	sortKey string // label values in label-name order, as registries sort
	values  []string
	pairs   [2][]*dto.LabelPair // sorted label pairs; rates: [0] zero, [1] nonzero
	bits    atomic.Uint64       // counter or gauge value
	zero    atomic.Uint64       // rate samples equal to zero
	nonzero atomic.Uint64       // rate samples not zero
	h       *hist
	created time.Time
}

func (s *series) addFloat(d float64) {
	for {
		old := s.bits.Load()
		if s.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// store holds every k6 series. Families are created from Metric lines,
// OTLP data or the built-in table; series are created on first sample up
// to the series limit.
type store struct {
	allow   []string // extra tags allowed as labels
	limit   int
	envs    []*envelope.Envelope
	now     func() time.Time
	nseries atomic.Int64

	mu       sync.RWMutex
	families map[string]*family

	onOverflow func()
}

func newStore(allow []string, limit int, envs []*envelope.Envelope) *store {
	return &store{allow: allow, limit: limit, envs: envs, now: time.Now, families: map[string]*family{}}
}

// errUnknownMetric is returned for a sample of a metric with no Metric
// line and no built-in type.
var errUnknownMetric = fmt.Errorf("metric has no Metric line and is not a k6 built-in")

// define registers a metric's type, keeping the first definition: k6
// never changes a metric's type within a run.
func (st *store) define(name string, typ k6.MetricType, contains k6.ValueType) *family {
	st.mu.RLock()
	f := st.families[name]
	st.mu.RUnlock()
	if f != nil {
		return f
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if f = st.families[name]; f != nil {
		return f
	}
	f = st.newFamily(name, typ, contains)
	st.families[name] = f
	return f
}

// lookup returns the family of name, typing built-ins on first use.
func (st *store) lookup(name string) (*family, error) {
	st.mu.RLock()
	f := st.families[name]
	st.mu.RUnlock()
	if f != nil {
		return f, nil
	}
	if b, ok := builtins[name]; ok {
		return st.define(name, b.typ, b.contains), nil
	}
	return nil, errUnknownMetric
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
		promLabels = append(promLabels, "condition")
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
	f.name, f.help, f.promLabels = seriesName, help, promLabels
	if typ == k6.Trend {
		f.bounds = ClassicBucketsAll(st.envs, name, contains)
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
		return slices.DeleteFunc(slices.Clone(d.Labels), func(l string) bool { return l == "condition" })
	}
	return catalogue.DefaultK6Labels
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

// get returns the series for tags, creating it unless the store is full;
// nil means the sample overflowed the series limit.
func (st *store) get(f *family, buf []byte, tags map[string]string) (*series, []byte) {
	buf = f.key(buf, tags)
	f.mu.RLock()
	s := f.series[string(buf)]
	f.mu.RUnlock()
	if s != nil {
		return s, buf
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s = f.series[string(buf)]; s != nil {
		return s, buf
	}
	if st.limit > 0 && st.nseries.Load() >= int64(st.limit) {
		if st.onOverflow != nil {
			st.onOverflow()
		}
		return nil, buf
	}
	values := make([]string, len(f.labels))
	for i, l := range f.labels {
		values[i] = tags[l]
	}
	s = &series{key: string(buf), values: values, created: st.now()}
	s.pairs[0] = f.labelPairs(values, "zero")
	var sk strings.Builder
	for _, lp := range s.pairs[0] {
		if lp.GetName() != "condition" {
			sk.WriteString(lp.GetValue())
			sk.WriteByte(0)
		}
	}
	s.sortKey = sk.String()
	if f.typ == k6.Rate {
		s.pairs[1] = f.labelPairs(values, "nonzero")
	}
	if f.typ == k6.Trend {
		s.h = newHist(f.bounds, s.created)
	}
	f.series[string(buf)] = s
	st.nseries.Add(1)
	return s, buf
}

// sample applies one k6 sample: a counter increment, a gauge value, a
// rate sample (0 or not) or a trend observation, in k6 units.
func (st *store) sample(f *family, s *series, v float64) {
	switch f.typ {
	case k6.Counter:
		s.addFloat(v)
	case k6.Gauge:
		s.bits.Store(math.Float64bits(v))
	case k6.Rate:
		if v != 0 {
			s.nonzero.Add(1)
		} else {
			s.zero.Add(1)
		}
	default:
		x := v * f.scale
		s.h.observe(x, 1, x)
	}
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
	sort.Slice(list, func(i, j int) bool { return list[i].sortKey < list[j].sortKey })
	return list
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

// collect emits every series as prometheus.Metrics (the Collector path,
// used by the pedantic tests and registries of other commands).
func (st *store) collect(ch chan<- prometheus.Metric) {
	for _, f := range st.sortedFamilies() {
		for _, s := range f.snapshot() {
			if f.typ == k6.Rate {
				ch <- &k6Metric{f: f, s: s, cond: 1}
				ch <- &k6Metric{f: f, s: s, cond: 0}
				continue
			}
			ch <- &k6Metric{f: f, s: s}
		}
	}
}

// k6Metric renders one series at scrape time.
type k6Metric struct {
	f    *family
	s    *series
	cond int
}

func (m *k6Metric) Desc() *prometheus.Desc { return m.f.desc }

func (m *k6Metric) Write(out *dto.Metric) error {
	m.f.write(m.s, m.cond, out)
	return nil
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
