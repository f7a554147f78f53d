package backtest

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/rules"
)

// replay feeds a run's points to a real exporter.Server scrape by scrape
// and samples its k6 Gatherer at each virtual scrape time, so the rules
// read exactly the series the exporter serves: its names, labels, rate
// conditions and histogram buckets.
type replay struct {
	scrape  time.Duration
	srv     *exporter.Server
	reads   map[string]bool // metric names the rules select
	defs    map[string]*k6.MetricDef
	points  []k6.Point // the points the rules' families see, in file order
	tagSets map[string]map[string]string
	keeps   map[string]bool // by k6 metric: of a family the rules read
	tagKeys []string
	t0      time.Time
	maxSlot int
	keyBuf  []byte
	cache   map[string]*exposed
}

// exposed is the store labels of one gathered series, built once.
type exposed struct {
	plain   labels.Labels   // counter or gauge
	bounds  []float64       // histogram: classic upper bounds without +Inf
	buckets []labels.Labels // histogram: one per bound, then +Inf
	sum     labels.Labels
	count   labels.Labels
}

func newReplay(env *envelope.Envelope, scrape time.Duration, reads map[string]bool) (*replay, error) {
	// No series or metric limit: a backtest stores every series of the
	// run, as an exporter sized for it would. The tags the envelope's
	// match names are kept as labels, as serve keeps them with
	// --k6.allow-tag, so the rules scoped to the match select the runs
	// tagged for it.
	allow, err := matchTags(env)
	if err != nil {
		return nil, err
	}
	srv, err := exporter.New(exporter.Config{Envelope: env, AllowTags: allow, DisableExporterMetrics: true})
	if err != nil {
		return nil, err
	}
	return &replay{scrape: scrape, srv: srv, reads: reads, defs: map[string]*k6.MetricDef{},
		tagSets: map[string]map[string]string{}, keeps: map[string]bool{}, cache: map[string]*exposed{}}, nil
}

// matchTags are the k6 tags the envelope's match names that the
// exporter does not keep as labels by default.
func matchTags(env *envelope.Envelope) ([]string, error) {
	ms, err := envelope.ParseMatch(env.Match)
	if err != nil {
		return nil, fmt.Errorf("envelope %s: match: %w", env.Name, err)
	}
	var out []string
	for _, m := range ms {
		if !catalogue.IsDefaultK6Label(m.Name) && !slices.Contains(out, m.Name) {
			out = append(out, m.Name)
		}
	}
	return out, nil
}

// tagValues are the values each tag takes on the points the rules read,
// sorted: what the envelope's match is checked against.
func (r *replay) tagValues() map[string][]string {
	out := map[string][]string{}
	for _, set := range r.tagSets {
		for k, v := range set {
			if !slices.Contains(out[k], v) {
				out[k] = append(out[k], v)
			}
		}
	}
	for _, vs := range out {
		slices.Sort(vs)
	}
	return out
}

// anyFamily in familiesRead's set: a selector may match any family.
const anyFamily = ""

// familiesRead lists the metric names the rules' selectors name.
func familiesRead(groups []*ruleGroup) map[string]bool {
	out := map[string]bool{}
	for _, g := range groups {
		for _, rl := range g.rules {
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(rl.expr)
			if err != nil {
				continue // loadGroups parsed it already
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					named := false
					for _, m := range vs.LabelMatchers {
						if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
							out[m.Value] = true
							named = true
						}
					}
					if !named {
						out[anyFamily] = true // a name regex, or none: every family
					}
				}
				return nil
			})
		}
	}
	return out
}

// readsFamily tells whether the rules select any series of family name
// (a classic histogram's _bucket, _sum and _count included).
func (r *replay) readsFamily(name string) bool {
	return r.reads[anyFamily] || r.reads[name] || r.reads[name+"_bucket"] || r.reads[name+"_sum"] || r.reads[name+"_count"]
}

// keep holds a point of a family the rules read until its scrape. Other
// families are left out: with no series limit they cannot change what
// the exporter serves for these.
func (r *replay) keep(p *k6.Point, def *k6.MetricDef) {
	read, ok := r.keeps[def.Name]
	if !ok {
		read = r.readsFamily(catalogue.SeriesName(def.Name, string(def.Type), string(def.Contains)))
		r.keeps[def.Name] = read
	}
	if !read {
		return
	}
	if slot := r.slot(p.Time); slot > r.maxSlot {
		r.maxSlot = slot
	}
	r.points = append(r.points, k6.Point{Metric: p.Metric, Time: p.Time, Value: p.Value, Tags: r.internTags(p.Tags)})
}

// internTags shares one copy of each tag set (the reader reuses its map).
func (r *replay) internTags(tags map[string]string) map[string]string {
	r.tagKeys = r.tagKeys[:0]
	for k := range tags {
		r.tagKeys = append(r.tagKeys, k)
	}
	slices.Sort(r.tagKeys)
	r.keyBuf = r.keyBuf[:0]
	for _, k := range r.tagKeys {
		r.keyBuf = append(r.keyBuf, k...)
		r.keyBuf = append(r.keyBuf, 0xfe)
		r.keyBuf = append(r.keyBuf, tags[k]...)
		r.keyBuf = append(r.keyBuf, 0xff)
	}
	if m, ok := r.tagSets[string(r.keyBuf)]; ok {
		return m
	}
	m := maps.Clone(tags)
	r.tagSets[string(r.keyBuf)] = m
	return m
}

// slot is the scrape that first sees a point at t; the first point kept
// sets the run's start.
func (r *replay) slot(t time.Time) int {
	if r.t0.IsZero() {
		r.t0 = t
	}
	d := t.Sub(r.t0)
	if d <= 0 {
		return 1
	}
	return max(int((d+r.scrape-1)/r.scrape), 1)
}

// appender receives the scraped samples: the backtest's in-memory store,
// or a TSDB in the test that checks the evaluation against Prometheus's
// rule manager.
type appender interface {
	Append(l labels.Labels, t int64, v float64) error
	AppendHistogram(l labels.Labels, t int64, fh *histogram.FloatHistogram) error
}

// write feeds the exporter each point before the first scrape at or
// after its time (k6's order kept within a scrape), gathers the exporter
// at every scrape up to lastSlot, and appends what it serves to app, with
// a synthetic up series. It consumes the replay: call it once.
func (r *replay) write(app appender, up labels.Labels, lastSlot int) error {
	sort.SliceStable(r.points, func(i, j int) bool { return r.slot(r.points[i].Time) < r.slot(r.points[j].Time) })
	next := 0
	for slot := 1; slot <= lastSlot; slot++ {
		for next < len(r.points) && r.slot(r.points[next].Time) <= slot {
			r.srv.IngestPoint(&r.points[next])
			next++
		}
		ts := r.t0.Add(time.Duration(slot) * r.scrape).UnixMilli()
		if err := r.scrapeAt(app, ts); err != nil {
			return err
		}
		if err := app.Append(up, ts, 1); err != nil {
			return err
		}
	}
	r.points = nil
	return nil
}

// nativeHistogram converts the native buckets of a gathered histogram,
// nil when it has none (as Prometheus's protobuf parser decides).
func nativeHistogram(h *dto.Histogram) *histogram.FloatHistogram {
	if len(h.GetPositiveSpan()) == 0 && len(h.GetNegativeSpan()) == 0 && h.GetZeroThreshold() == 0 && h.GetZeroCount() == 0 {
		return nil
	}
	spans := func(in []*dto.BucketSpan) []histogram.Span {
		out := make([]histogram.Span, len(in))
		for i, s := range in {
			out[i] = histogram.Span{Offset: s.GetOffset(), Length: s.GetLength()}
		}
		return out
	}
	counts := func(deltas []int64, abs []float64) []float64 {
		if len(deltas) == 0 {
			return slices.Clone(abs)
		}
		out := make([]float64, len(deltas))
		var c int64
		for i, d := range deltas {
			c += d
			out[i] = float64(c)
		}
		return out
	}
	zero := float64(h.GetZeroCount())
	if h.ZeroCountFloat != nil {
		zero = h.GetZeroCountFloat()
	}
	count := float64(h.GetSampleCount())
	if h.SampleCountFloat != nil {
		count = h.GetSampleCountFloat()
	}
	return &histogram.FloatHistogram{
		Schema: h.GetSchema(), ZeroThreshold: h.GetZeroThreshold(), ZeroCount: zero,
		Count: count, Sum: h.GetSampleSum(),
		PositiveSpans: spans(h.GetPositiveSpan()), PositiveBuckets: counts(h.GetPositiveDelta(), h.GetPositiveCount()),
		NegativeSpans: spans(h.GetNegativeSpan()), NegativeBuckets: counts(h.GetNegativeDelta(), h.GetNegativeCount()),
	}
}

// scrapeAt gathers the exporter's k6 series and appends those of the
// families the rules read, at ts, as Prometheus stores a scrape: counters
// and gauges by value, histograms as classic _bucket, _sum and _count
// series and, when served, a native histogram; empty label values are
// absent.
func (r *replay) scrapeAt(app appender, ts int64) error {
	mfs, err := r.srv.K6Gatherer().Gather()
	if err != nil {
		return fmt.Errorf("gathering the exporter: %w", err)
	}
	for _, mf := range mfs {
		if !r.readsFamily(mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			if err := r.appendMetric(app, mf, m, ts); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *replay) appendMetric(app appender, mf *dto.MetricFamily, m *dto.Metric, ts int64) error {
	e := r.exposedOf(mf, m)
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return app.Append(e.plain, ts, m.GetCounter().GetValue())
	case dto.MetricType_GAUGE:
		return app.Append(e.plain, ts, m.GetGauge().GetValue())
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		i := 0
		for _, b := range h.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue
			}
			if err := app.Append(e.buckets[i], ts, float64(b.GetCumulativeCount())); err != nil {
				return err
			}
			i++
		}
		if err := app.Append(e.buckets[i], ts, float64(h.GetSampleCount())); err != nil {
			return err
		}
		if err := app.Append(e.sum, ts, h.GetSampleSum()); err != nil {
			return err
		}
		if err := app.Append(e.count, ts, float64(h.GetSampleCount())); err != nil {
			return err
		}
		if fh := nativeHistogram(h); fh != nil {
			// Stored beside the classic series, as Prometheus does with
			// always_scrape_classic_histograms.
			return app.AppendHistogram(e.plain, ts, fh)
		}
		return nil
	}
	return fmt.Errorf("%s: metric type %v not read by backtest", mf.GetName(), mf.GetType())
}

// exposedOf returns the store labels of a gathered series, cached by
// family and label values (a histogram's also by its bucket bounds).
func (r *replay) exposedOf(mf *dto.MetricFamily, m *dto.Metric) *exposed {
	var bounds []float64
	r.keyBuf = append(r.keyBuf[:0], mf.GetName()...)
	for _, lp := range m.GetLabel() {
		r.keyBuf = append(r.keyBuf, 0xff)
		r.keyBuf = append(r.keyBuf, lp.GetValue()...)
	}
	if h := m.GetHistogram(); h != nil {
		for _, b := range h.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				bounds = append(bounds, b.GetUpperBound())
			}
		}
	}
	if e, ok := r.cache[string(r.keyBuf)]; ok && slices.Equal(e.bounds, bounds) {
		return e
	}
	lb := labels.NewBuilder(labels.EmptyLabels())
	for _, lp := range m.GetLabel() {
		if lp.GetValue() != "" {
			lb.Set(lp.GetName(), lp.GetValue())
		}
	}
	name := mf.GetName()
	e := &exposed{plain: lb.Set(model.MetricNameLabel, name).Labels(), bounds: bounds}
	if mf.GetType() == dto.MetricType_HISTOGRAM {
		for _, b := range bounds {
			e.buckets = append(e.buckets, lb.Set(model.MetricNameLabel, name+"_bucket").Set("le", rules.LeValue(b)).Labels())
		}
		e.buckets = append(e.buckets, lb.Set(model.MetricNameLabel, name+"_bucket").Set("le", "+Inf").Labels())
		lb.Del("le")
		e.sum = lb.Set(model.MetricNameLabel, name+"_sum").Labels()
		e.count = lb.Set(model.MetricNameLabel, name+"_count").Labels()
	}
	r.cache[string(r.keyBuf)] = e
	return e
}

// read streams a k6 NDJSON file (gzip detected by content), leaving out
// the points of the first skip of the run.
func (r *replay) read(path string, skip time.Duration) error {
	var from time.Time
	if skip > 0 {
		// The run's start as the loader places a window (k6.TestStart).
		var minT, vusT time.Time
		err := scanNDJSON(path, func(p *k6.Point, _ *k6.MetricDef) error {
			if p == nil {
				return nil
			}
			if minT.IsZero() || p.Time.Before(minT) {
				minT = p.Time
			}
			if p.Metric == "vus" && (vusT.IsZero() || p.Time.Before(vusT)) {
				vusT = p.Time
			}
			return nil
		})
		if err != nil {
			return err
		}
		from = k6.TestStart(minT, vusT).Add(skip)
	}
	err := scanNDJSON(path, func(p *k6.Point, def *k6.MetricDef) error {
		if def != nil {
			r.defs[def.Name] = def
			delete(r.keeps, def.Name)
			r.srv.DefineMetric(def)
			return nil
		}
		def = r.defs[p.Metric]
		if def == nil {
			return fmt.Errorf("metric: point of %q before its Metric line", p.Metric)
		}
		if p.Time.Before(from) {
			return nil
		}
		r.keep(p, def)
		return nil
	})
	if err != nil {
		return err
	}
	if r.t0.IsZero() {
		if skip > 0 {
			return fmt.Errorf("%s: no points after the first %s (--skip-warmup)", path, skip)
		}
		return fmt.Errorf("%s: no points: backtest needs a point stream (k6 --out json)", path)
	}
	return nil
}

// scanNDJSON calls fn for each point (def nil) and each Metric line
// (def set) of a k6 NDJSON file; errors carry the file and line.
func scanNDJSON(path string, fn func(p *k6.Point, def *k6.MetricDef) error) error {
	return k6.ReadPointsFile(path, &k6.PointReader{
		OnPoint:  func(p *k6.Point) error { return fn(p, nil) },
		OnMetric: func(def *k6.MetricDef) error { return fn(nil, def) },
		OnBad:    k6.FailOnBadLine,
		MaxLine:  16 << 20,
	})
}
