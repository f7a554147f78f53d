// Package backtest replays k6 runs through Prometheus's own rule engine:
// it turns a run's points into the series the exporter would have exposed
// (catalogue names and labels, classic histograms in seconds) as a 15 s
// scrape would have sampled them, stores them in memory, evaluates the
// rule files with Prometheus's PromQL engine at virtual time, and reports
// which alerts fired and when.
package backtest

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/rules"
)

// Options steer a backtest.
type Options struct {
	Scrape time.Duration // scrape and evaluation step; 0 = 15s
	// ExporterSelector labels the synthetic up series (equality matchers).
	ExporterSelector string
	// Tail keeps evaluating this long after the last point, with the
	// exporter still up and the counters flat (0 = stop at the end).
	Tail time.Duration
	// SkipWarmup drops the points of the run's first D, as the loader
	// does for an envelope's baseline runs.
	SkipWarmup time.Duration
}

// Alert is one alert that reached firing.
type Alert struct {
	Alertname    string            `json:"alertname"`
	Labels       map[string]string `json:"labels"`
	FirstFiringS float64           `json:"first_firing_s"`
}

// Run is the outcome for one run file.
type Run struct {
	Source    string  `json:"source"`
	DurationS float64 `json:"duration_s"`
	Alerts    []Alert `json:"alerts"`
}

// Report is what `exporter backtest --format json` prints.
type Report struct {
	Runs []Run `json:"runs"`
}

// buckets is the classic layout the exporter gives a k6 time trend under
// env (its default ladder plus the envelope's band edges and alert
// thresholds), cached per metric.
func (r *replay) bucketsFor(metric string) []float64 {
	if b, ok := r.layouts[metric]; ok {
		return b
	}
	b := exporter.ClassicBuckets(r.env, metric, k6.Time)
	sort.Float64s(b)
	b = slices.Compact(b)
	r.layouts[metric] = b
	return b
}

type kind int

const (
	kCounter kind = iota
	kGauge
	kHist
)

// series accumulates one exposed series per scrape slot.
type series struct {
	name   string
	labels labels.Labels
	kind   kind
	first  int         // first slot with a point
	vals   []float64   // counter: increments; gauge: last value (NaN = none)
	bkts   [][]float64 // histogram: per slot, per bucket increments (last = +Inf)
	sums   []float64
	edges  []float64 // histogram bucket upper bounds, without +Inf
}

func (s *series) grow(slot int) {
	nb := len(s.edges)
	for len(s.vals) <= slot {
		v := 0.0
		if s.kind == kGauge {
			v = math.NaN()
		}
		s.vals = append(s.vals, v)
		if s.kind == kHist {
			s.bkts = append(s.bkts, make([]float64, nb+1))
			s.sums = append(s.sums, 0)
		}
	}
}

// builtin trends the exporter does not expose as endpoint histograms.
func exposedTrend(name string) bool {
	return name == "http_req_duration" || (!strings.HasPrefix(name, "http_req_") && name != "iteration_duration" && name != "group_duration")
}

type replay struct {
	scrape  time.Duration
	env     *envelope.Envelope
	layouts map[string][]float64
	defs    map[string]*k6.MetricDef
	series  map[string]*series
	t0      time.Time
	maxSlot int
	keyBuf  []byte
}

func (r *replay) get(name string, k kind, tags map[string]string, keys []string, extra ...string) *series {
	r.keyBuf = append(r.keyBuf[:0], name...)
	for _, k := range keys {
		if v := tags[k]; v != "" {
			r.keyBuf = append(r.keyBuf, 0xff)
			r.keyBuf = append(r.keyBuf, k...)
			r.keyBuf = append(r.keyBuf, '=')
			r.keyBuf = append(r.keyBuf, v...)
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		r.keyBuf = append(r.keyBuf, 0xff)
		r.keyBuf = append(r.keyBuf, extra[i]+"="+extra[i+1]...)
	}
	if s, ok := r.series[string(r.keyBuf)]; ok {
		return s
	}
	b := labels.NewScratchBuilder(len(keys) + 2)
	for _, k := range keys {
		if v := tags[k]; v != "" {
			b.Add(k, v)
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		b.Add(extra[i], extra[i+1])
	}
	b.Sort()
	s := &series{name: name, labels: b.Labels(), kind: k, first: -1}
	r.series[string(r.keyBuf)] = s
	return s
}

func (r *replay) slot(t time.Time) int {
	if r.t0.IsZero() {
		r.t0 = t
	}
	d := t.Sub(r.t0)
	if d <= 0 {
		return 1
	}
	// A point at t is first seen by the scrape at or after t.
	s := int((d + r.scrape - 1) / r.scrape)
	if s < 1 {
		s = 1
	}
	return s
}

var iterLabels = []string{"testid", "scenario"}
var vuLabels = []string{"testid"}

func (r *replay) add(p *k6.Point) {
	def := r.defs[p.Metric]
	if def == nil {
		return
	}
	var s *series
	v := p.Value
	switch {
	case p.Metric == "http_reqs":
		s = r.get(catalogue.HTTPReqs.Name, kCounter, p.Tags, catalogue.DefaultK6Labels)
	case p.Metric == "http_req_failed":
		// The exporter exposes both conditions from the first sample on.
		zero := r.get(catalogue.HTTPReqFailed.Name, kCounter, p.Tags, catalogue.DefaultK6Labels, "condition", "zero")
		nonzero := r.get(catalogue.HTTPReqFailed.Name, kCounter, p.Tags, catalogue.DefaultK6Labels, "condition", "nonzero")
		r.touch(zero, p.Time)
		r.touch(nonzero, p.Time)
		s = zero
		if v != 0 {
			s = nonzero
		}
		v = 1
	case p.Metric == "iterations":
		s = r.get(catalogue.Iterations.Name, kCounter, p.Tags, iterLabels)
	case p.Metric == "vus":
		s = r.get(catalogue.VUs.Name, kGauge, p.Tags, vuLabels)
	case def.Type == k6.Trend && def.Contains == k6.Time && exposedTrend(p.Metric):
		s = r.get(catalogue.SeriesName(p.Metric, "trend", "time"), kHist, p.Tags, catalogue.DefaultK6Labels)
		if s.edges == nil {
			s.edges = r.bucketsFor(p.Metric)
		}
		v /= 1000
	default:
		return
	}
	slot := r.touch(s, p.Time)
	switch s.kind {
	case kCounter:
		s.vals[slot] += v
	case kGauge:
		s.vals[slot] = v
	case kHist:
		i := sort.SearchFloat64s(s.edges, v) // first edge >= v: le is inclusive
		s.bkts[slot][i]++
		s.sums[slot] += v
		s.vals[slot]++
	}
}

// touch starts s at the scrape that first sees time t and returns that slot.
func (r *replay) touch(s *series, t time.Time) int {
	slot := r.slot(t)
	if slot > r.maxSlot {
		r.maxSlot = slot
	}
	s.grow(slot)
	if s.first < 0 || slot < s.first {
		s.first = slot
	}
	return slot
}

// read streams a k6 NDJSON file (gzip detected by content), leaving out
// the points of the first skip of the run.
func (r *replay) read(path string, skip time.Duration) error {
	var from time.Time
	if skip > 0 {
		// The run's start as the loader finds it: the earliest point, or
		// one second before the first vus sample when that is earlier.
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
		start := minT
		if !vusT.IsZero() && vusT.Add(-time.Second).Before(minT) {
			start = vusT.Add(-time.Second)
		}
		from = start.Add(skip)
	}
	err := scanNDJSON(path, func(p *k6.Point, def *k6.MetricDef) error {
		if def != nil {
			r.defs[def.Name] = def
			return nil
		}
		if r.defs[p.Metric] == nil {
			return fmt.Errorf("metric: point of %q before its Metric line", p.Metric)
		}
		if p.Time.Before(from) {
			return nil
		}
		r.add(p)
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

// appender receives the scraped samples: the backtest's in-memory store,
// or a TSDB in the test that checks the evaluation against Prometheus's
// rule manager.
type appender interface {
	Append(l labels.Labels, t int64, v float64) error
}

// write appends every series' scraped samples to app.
func (r *replay) write(app appender, up labels.Labels, lastSlot int) error {
	ts := func(slot int) int64 { return r.t0.Add(time.Duration(slot) * r.scrape).UnixMilli() }
	keys := make([]string, 0, len(r.series))
	for k := range r.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := r.series[k]
		s.grow(lastSlot)
		switch s.kind {
		case kCounter, kGauge:
			lb := labels.NewBuilder(s.labels).Set(model.MetricNameLabel, s.name).Labels()
			acc, last := 0.0, math.NaN()
			for slot := s.first; slot <= lastSlot; slot++ {
				v := s.vals[slot]
				if s.kind == kCounter {
					acc += v
					v = acc
				} else if math.IsNaN(v) {
					v = last
				}
				last = v
				if math.IsNaN(v) {
					continue
				}
				if err := app.Append(lb, ts(slot), v); err != nil {
					return err
				}
			}
		case kHist:
			n := len(s.edges)
			bl := make([]labels.Labels, n+1)
			for i := 0; i <= n; i++ {
				le := "+Inf"
				if i < n {
					le = rules.LeValue(s.edges[i])
				}
				bl[i] = labels.NewBuilder(s.labels).Set(model.MetricNameLabel, s.name+"_bucket").Set("le", le).Labels()
			}
			sumL := labels.NewBuilder(s.labels).Set(model.MetricNameLabel, s.name+"_sum").Labels()
			cntL := labels.NewBuilder(s.labels).Set(model.MetricNameLabel, s.name+"_count").Labels()
			acc := make([]float64, n+1)
			var sum, cnt float64
			for slot := s.first; slot <= lastSlot; slot++ {
				for i, v := range s.bkts[slot] {
					acc[i] += v
				}
				sum += s.sums[slot]
				cnt += s.vals[slot]
				var cum float64
				for i := 0; i <= n; i++ {
					cum += acc[i]
					if err := app.Append(bl[i], ts(slot), cum); err != nil {
						return err
					}
				}
				if err := app.Append(sumL, ts(slot), sum); err != nil {
					return err
				}
				if err := app.Append(cntL, ts(slot), cnt); err != nil {
					return err
				}
			}
		}
	}
	for slot := 1; slot <= lastSlot; slot++ {
		if err := app.Append(up, ts(slot), 1); err != nil {
			return err
		}
	}
	return nil
}

// prepared is a run read and turned into scraped series, ready to store.
type prepared struct {
	r        *replay
	up       labels.Labels
	lastSlot int
}

// prepare reads the run file and models its scrapes.
func prepare(env *envelope.Envelope, path string, o *Options) (*prepared, error) {
	if o.Scrape <= 0 {
		o.Scrape = 15 * time.Second
	}
	if o.ExporterSelector == "" {
		o.ExporterSelector = rules.DefaultOptions().ExporterSelector
	}
	if _, err := rules.Calibrate(env); err != nil {
		return nil, err
	}
	r := &replay{scrape: o.Scrape, env: env, layouts: map[string][]float64{}, defs: map[string]*k6.MetricDef{}, series: map[string]*series{}}
	if err := r.read(path, o.SkipWarmup); err != nil {
		return nil, err
	}
	up, err := upLabels(o.ExporterSelector)
	if err != nil {
		return nil, err
	}
	return &prepared{r: r, up: up, lastSlot: r.maxSlot + int(o.Tail/o.Scrape)}, nil
}

// firing records alerts when they first reach firing.
type firing struct {
	run  *Run
	t0   time.Time
	seen map[string]bool
}

func (f *firing) note(alertname string, l labels.Labels, ts time.Time) {
	key := l.String()
	if f.seen[key] {
		return
	}
	f.seen[key] = true
	f.run.Alerts = append(f.run.Alerts, Alert{Alertname: alertname, Labels: l.Map(), FirstFiringS: ts.Sub(f.t0).Seconds()})
}

func (f *firing) sort() {
	sort.SliceStable(f.run.Alerts, func(i, j int) bool {
		a, b := f.run.Alerts[i], f.run.Alerts[j]
		if a.FirstFiringS != b.FirstFiringS {
			return a.FirstFiringS < b.FirstFiringS
		}
		return labels.FromMap(a.Labels).String() < labels.FromMap(b.Labels).String()
	})
}

// newEngine is the PromQL engine of a backtest, with Prometheus's
// default lookback.
func newEngine(logger *slog.Logger) *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{Logger: logger, MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
}

// File backtests one run file against the rule files.
func File(ctx context.Context, env *envelope.Envelope, ruleFiles []string, path string, o Options) (*Run, error) {
	pr, err := prepare(env, path, &o)
	if err != nil {
		return nil, err
	}
	r := pr.r
	store := newMemStore()
	if err := r.write(store, pr.up, pr.lastSlot); err != nil {
		return nil, fmt.Errorf("%s: storing series: %w", path, err)
	}
	logger := slog.New(slog.DiscardHandler)
	groups, err := loadGroups(ruleFiles, o.Scrape, logger)
	if err != nil {
		return nil, err
	}
	e := &ruleEngine{engine: newEngine(logger), store: store}

	run := &Run{Source: path, DurationS: (time.Duration(r.maxSlot) * o.Scrape).Seconds(), Alerts: []Alert{}}
	fired := &firing{run: run, t0: r.t0, seen: map[string]bool{}}
	for slot := 1; slot <= pr.lastSlot; slot++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ts := r.t0.Add(time.Duration(slot) * o.Scrape)
		for _, g := range groups {
			if g.interval > o.Scrape && (time.Duration(slot)*o.Scrape)%g.interval != 0 {
				continue
			}
			if err := e.evalGroup(ctx, g, ts); err != nil {
				return nil, fmt.Errorf("%s at %s", err, ts.Sub(r.t0))
			}
			for _, rl := range g.rules {
				for _, a := range rl.active {
					if a.state == stateFiring && a.resolvedAt.IsZero() {
						fired.note(rl.name, a.labels, ts)
					}
				}
			}
		}
	}
	fired.sort()
	return run, nil
}

func upLabels(sel string) (labels.Labels, error) {
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector("{" + sel + "}")
	if err != nil {
		return labels.EmptyLabels(), fmt.Errorf("exporter selector %q: %w", sel, err)
	}
	m := map[string]string{model.MetricNameLabel: "up", "instance": "backtest"}
	for _, x := range ms {
		if x.Type == labels.MatchEqual {
			m[x.Name] = x.Value
		}
	}
	return labels.FromMap(m), nil
}

// RuleFiles lists the rule files in dir (*.rules.yaml / *.rules.yml,
// not the promtool tests).
func RuleFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.Contains(n, ".test.") {
			continue
		}
		if strings.HasSuffix(n, ".rules.yaml") || strings.HasSuffix(n, ".rules.yml") {
			out = append(out, dir+string(os.PathSeparator)+n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no *.rules.yaml files", dir)
	}
	sort.Strings(out)
	return out, nil
}

// Text renders a report for people.
func (rep *Report) Text() string {
	var b strings.Builder
	for _, r := range rep.Runs {
		fmt.Fprintf(&b, "%s (%s of points): ", r.Source, model.Duration(time.Duration(r.DurationS*float64(time.Second))))
		if len(r.Alerts) == 0 {
			b.WriteString("no alert fired\n")
			continue
		}
		fmt.Fprintf(&b, "%d alert(s) fired\n", len(r.Alerts))
		for _, a := range r.Alerts {
			l := labels.FromMap(a.Labels)
			l = labels.NewBuilder(l).Del(model.AlertNameLabel).Labels()
			fmt.Fprintf(&b, "  %-32s first firing at %6.0fs  %s\n", a.Alertname, a.FirstFiringS, l.String())
		}
	}
	return b.String()
}
