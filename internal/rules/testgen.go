package rules

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/template"

	c6 "github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// The promtool test file: for every alert a test group whose input holds
// a baseline-like testid (or target) that must stay silent and a
// regressed one that must fire, with the exact labels and annotations.
// Inputs are built so the observed value is known in closed form (linear
// counters give exact rates, bucket increments give exact fractions), so
// the expected annotations are rendered from the design value, not read
// back from an evaluation.

type promtoolFile struct {
	RuleFiles          []string        `yaml:"rule_files"`
	EvaluationInterval string          `yaml:"evaluation_interval"`
	Tests              []promtoolGroup `yaml:"tests"`
}

type promtoolGroup struct {
	Name        string          `yaml:"name"`
	Interval    string          `yaml:"interval"`
	InputSeries []promtoolInput `yaml:"input_series"`
	AlertTests  []promtoolAlert `yaml:"alert_rule_test"`
}

type promtoolInput struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type promtoolAlert struct {
	EvalTime  string        `yaml:"eval_time"`
	Alertname string        `yaml:"alertname"`
	ExpAlerts []expectAlert `yaml:"exp_alerts"`
}

type expectAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

const (
	testStep  = 15 * time.Second
	testSteps = 80 // 20m of samples
	testEval  = "18m"
)

type testBuilder struct {
	c    *Calibration
	o    Options
	f    *RuleFile
	s    scope
	tl   *testLabels
	in   []promtoolInput
	rule map[string][]Rule
}

// unmatched is the testid of an input that the envelope's match refuses:
// it is regressed, and must never fire.
const unmatched = "unmatched"

// add adds an input series. k6 series get the labels the envelope's
// match selects, and their design testid is mapped to one it accepts;
// the unmatched testid gets a label set the match refuses.
func (b *testBuilder) add(name string, l map[string]string, values string) {
	m := map[string]string{}
	if name != "up" {
		base := b.tl.in
		if l["testid"] == unmatched {
			base = b.tl.out
		}
		for k, v := range base {
			if name == vus && perRequestTags[k] {
				continue // k6 never puts per-request tags on the VU gauge
			}
			m[k] = v
		}
	}
	for k, v := range l {
		if k == "testid" && v != unmatched {
			v = b.tl.testid(v)
		}
		m[k] = v
	}
	m[model.MetricNameLabel] = name
	b.in = append(b.in, promtoolInput{Series: labels.FromMap(m).String(), Values: values})
}

// hasUnmatched is true when the envelope's match refuses some test, so an
// unmatched input can prove the rules ignore it.
func (b *testBuilder) hasUnmatched() bool {
	if len(b.tl.ms) == 0 {
		return false
	}
	if b.tl.out != nil {
		return true
	}
	for _, m := range b.tl.ms {
		if m.Name == "testid" && !m.Matches(unmatched) {
			return true
		}
	}
	return false
}

// linear is a counter growing by perSec each second from 0.
func linear(perSec float64) string {
	// Rounded to the micro-unit so float products (41.19 × 15) print as
	// written rather than as 617.8499999999999.
	step := math.Round(perSec*testStep.Seconds()*1e6) / 1e6
	return fmt.Sprintf("0+%sx%d", fmtFloat(step), testSteps)
}

func constant(v float64) string { return fmt.Sprintf("%sx%d", fmtFloat(v), testSteps) }

func tid(id string, extra ...string) map[string]string {
	m := map[string]string{"testid": id}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// expect renders the alert as Prometheus would for a result series with
// labels seriesLabels and value v.
func (b *testBuilder) expect(r Rule, seriesLabels map[string]string, v float64) (expectAlert, error) {
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	var data any
	u, _ := url.Parse("")
	expand := func(what, text string) (string, error) {
		t := template.NewTemplateExpander(context.Background(), defs+text, "__alert_"+r.Alert, data, 0, nil, u, nil)
		s, err := t.Expand()
		if err != nil {
			return "", fmt.Errorf("alert %s %s: %w", r.Alert, what, err)
		}
		return s, nil
	}
	// The result series keeps the aggregation's labels: testid (mapped
	// as add maps it) and the topology labels the match sets.
	sl := map[string]string{}
	for k, x := range seriesLabels {
		if k == "testid" {
			x = b.tl.testid(x)
		}
		sl[k] = x
	}
	if _, ok := sl["testid"]; ok {
		for _, k := range b.s.keep {
			if v, ok := b.tl.in[k]; ok {
				sl[k] = v
			}
		}
	}
	seriesLabels = sl
	data = template.AlertTemplateData(seriesLabels, nil, "", promql.Sample{F: v})
	// Rule labels and annotations are both templates.
	l := map[string]string{}
	for k, x := range seriesLabels {
		l[k] = x
	}
	for k, text := range r.Labels {
		s, err := expand("label "+k, text)
		if err != nil {
			return expectAlert{}, err
		}
		l[k] = s
	}
	anns := map[string]string{}
	for k, text := range r.Annotations {
		s, err := expand("annotation "+k, text)
		if err != nil {
			return expectAlert{}, err
		}
		anns[k] = s
	}
	return expectAlert{ExpLabels: l, ExpAnnotations: anns}, nil
}

func (b *testBuilder) group(name, alert string, exp ...expectAlert) promtoolGroup {
	g := promtoolGroup{Name: name, Interval: testStep.String(), InputSeries: b.in,
		AlertTests: []promtoolAlert{{EvalTime: testEval, Alertname: alert, ExpAlerts: exp}}}
	if g.AlertTests[0].ExpAlerts == nil {
		g.AlertTests[0].ExpAlerts = []expectAlert{}
	}
	b.in = nil
	return g
}

func newTestBuilder(env *envelope.Envelope, f *RuleFile, c *Calibration, o Options) (*testBuilder, error) {
	s, err := newScope(env, o)
	if err != nil {
		return nil, err
	}
	tl, err := newTestLabels(env)
	if err != nil {
		return nil, err
	}
	b := &testBuilder{c: c, o: o, f: f, s: s, tl: tl, rule: map[string][]Rule{}}
	for _, r := range f.Alerts() {
		b.rule[r.Alert] = append(b.rule[r.Alert], r)
	}
	return b, nil
}

// MarshalTests builds the promtool test file for the rules of f.
func MarshalTests(env *envelope.Envelope, f *RuleFile, c *Calibration, o Options) ([]byte, error) {
	b, err := newTestBuilder(env, f, c, o)
	if err != nil {
		return nil, err
	}
	var groups []promtoolGroup
	for _, gen := range []func() (promtoolGroup, bool, error){
		b.throughputLow, b.throughputUnstable, b.latencyHigh, b.endpointLatency,
		b.requestsFailing, b.saturation, b.exporterDown, b.noTraffic,
	} {
		g, ok, err := gen()
		if err != nil {
			return nil, err
		}
		if ok {
			groups = append(groups, g)
		}
	}
	pf := promtoolFile{RuleFiles: []string{RulesFile}, EvaluationInterval: testStep.String(), Tests: groups}
	out, err := marshalYAML(pf)
	if err != nil {
		return nil, err
	}
	return append([]byte(header(env)), out...), nil
}

func (b *testBuilder) vus(ids ...string) {
	n := float64(max(b.c.VUs, 1))
	for _, id := range ids {
		b.add(vus, tid(id), constant(n))
	}
}

// throughputSeries adds request counters for a baseline test at the
// envelope's mean rate and a regressed one at 80% of the calibrated
// floor, and returns that regressed rate.
func (b *testBuilder) throughputSeries() float64 {
	t := b.c.Throughput
	low := round2(t.Floor * 0.8)
	b.add(reqs, tid("baseline"), linear(round2(t.Mean)))
	b.add(reqs, tid("regressed"), linear(low))
	return low
}

// round2 keeps designed rates short in the test file.
func round2(v float64) float64 { return math.Round(v*100) / 100 }

func (b *testBuilder) throughputLow() (promtoolGroup, bool, error) {
	rs := b.rule[AlertThroughputLow]
	if len(rs) == 0 {
		return promtoolGroup{}, false, nil
	}
	low := b.throughputSeries()
	b.vus("baseline", "regressed")
	e, err := b.expect(rs[0], tid("regressed"), low)
	return b.group(AlertThroughputLow+" fires below the calibrated floor and stays silent at the envelope mean", AlertThroughputLow, e), true, err
}

func (b *testBuilder) throughputUnstable() (promtoolGroup, bool, error) {
	rs := b.rule[AlertThroughputUnstable]
	if len(rs) == 0 {
		return promtoolGroup{}, false, nil
	}
	// Increments alternating a, b every 15s make the 1m rate alternate
	// between (2a+b)/45 and (a+2b)/45: a CV of exactly d/3 for
	// a, b = m(1±d). The regressed testid runs at twice the bound.
	m := b.c.Throughput.Mean * testStep.Seconds()
	cv := math.Min(2*b.c.CV.Bound, 0.3)
	d := 3 * cv
	var vals []string
	acc := 0.0
	for i := 0; i <= testSteps; i++ {
		vals = append(vals, fmtFloat(round2(acc)))
		if i%2 == 0 {
			acc += m * (1 + d)
		} else {
			acc += m * (1 - d)
		}
	}
	b.add(reqs, tid("baseline"), linear(round2(b.c.Throughput.Mean)))
	b.add(reqs, tid("regressed"), strings.Join(vals, " "))
	b.vus("baseline", "regressed")
	e, err := b.expect(rs[0], tid("regressed"), cv)
	return b.group(AlertThroughputUnstable+" fires when the 1m rate swings and stays silent on a steady rate", AlertThroughputUnstable, e), true, err
}

// buckets adds a classic histogram whose slow fraction above each edge is
// given; reqPerSec is the +Inf rate.
func (b *testBuilder) buckets(series string, l map[string]string, reqPerSec float64, above map[string]float64) {
	les := make([]string, 0, len(above))
	for le := range above {
		les = append(les, le)
	}
	sort.Strings(les) // map order would make the file differ run to run
	for _, le := range les {
		f := above[le]
		m := map[string]string{"le": le}
		for k, v := range l {
			m[k] = v
		}
		b.add(series+"_bucket", m, linear(reqPerSec*(1-f)))
	}
	m := map[string]string{"le": "+Inf"}
	for k, v := range l {
		m[k] = v
	}
	b.add(series+"_bucket", m, linear(reqPerSec))
}

// slowDesign is the slow fraction each quantile's test uses: far above
// the bound for the regressed series, well inside it for the baseline.
func slowDesign(bs []LatencyBound, regressed bool) map[string]float64 {
	out := map[string]float64{}
	for _, lb := range bs {
		f := lb.Tail / 5
		if regressed {
			// For the median test (tail 0.5), halfway from 0.5 to 1.
			f = math.Min(lb.Tail*5, (1+lb.Tail)/2)
		}
		// Where two quantiles share an edge, the larger tail wins.
		if cur, ok := out[lb.Le]; !ok || f > cur {
			out[lb.Le] = f
		}
	}
	return out
}

func (b *testBuilder) latencyHigh() (promtoolGroup, bool, error) {
	rs := b.rule[AlertLatencyHigh]
	if len(rs) == 0 {
		return promtoolGroup{}, false, nil
	}
	rate := 40.0
	b.buckets(duration, tid("baseline"), rate, slowDesign(b.c.Latency, false))
	reg := slowDesign(b.c.Latency, true)
	b.buckets(duration, tid("regressed"), rate, reg)
	b.vus("baseline", "regressed")
	// A scrape with only the native histogram is judged on its estimate;
	// one with both kinds on the exact classic bucket, even where the
	// estimate alone would fire.
	nativeSlow := 0.0
	for _, f := range reg {
		nativeSlow = math.Max(nativeSlow, f)
	}
	b.native(duration, tid("native-only"), rate, b.c.Latency, nativeSlow)
	b.native(duration, tid("classic-exact"), rate, b.c.Latency, nativeSlow)
	b.buckets(duration, tid("classic-exact"), rate, slowDesign(b.c.Latency, false))
	b.vus("native-only", "classic-exact")
	if b.hasUnmatched() {
		b.buckets(duration, tid(unmatched), rate, reg)
		b.vus(unmatched)
	}
	var exp []expectAlert
	for i, lb := range b.c.Latency {
		e, err := b.expect(rs[i], tid("regressed"), reg[lb.Le])
		if err != nil {
			return promtoolGroup{}, false, err
		}
		n, err := b.expect(rs[i], tid("native-only"), nativeSlow)
		if err != nil {
			return promtoolGroup{}, false, err
		}
		exp = append(exp, e, n)
	}
	return b.group(AlertLatencyHigh+" fires when too many requests are slower than the band edge, on the classic bucket where it is scraped and on the native estimate where only that is", AlertLatencyHigh, exp...), true, nil
}

// native adds a native histogram (schema 0) of reqPerSec observations a
// second, a fraction slow of them in a bucket wholly above every
// threshold of bs and the rest in one wholly below, so the estimated slow
// fraction equals slow exactly.
func (b *testBuilder) native(series string, l map[string]string, reqPerSec float64, bs []LatencyBound, slow float64) {
	lo, hi := math.Inf(1), 0.0
	for _, lb := range bs {
		lo, hi = math.Min(lo, lb.Threshold), math.Max(hi, lb.Threshold)
	}
	// Bucket i of schema 0 holds (2^(i-1), 2^i].
	fastIdx := int(math.Floor(math.Log2(lo))) - 1
	slowIdx := int(math.Ceil(math.Log2(hi))) + 1
	n := reqPerSec * testStep.Seconds()
	nSlow := math.Round(n * slow)
	bk := make([]string, slowIdx-fastIdx+1)
	for i := range bk {
		bk[i] = "0"
	}
	bk[0] = fmtFloat(n - nSlow)
	bk[len(bk)-1] = fmtFloat(nSlow)
	sum := (n-nSlow)*math.Pow(2, float64(fastIdx)) + nSlow*math.Pow(2, float64(slowIdx))
	step := fmt.Sprintf("{{schema:0 sum:%s count:%s offset:%d buckets:[%s]}}", fmtFloat(round2(sum)), fmtFloat(n), fastIdx, strings.Join(bk, " "))
	zero := "{{schema:0 sum:0 count:0}}"
	b.add(series, l, fmt.Sprintf("%s+%sx%d", zero, step, testSteps))
}

func (b *testBuilder) endpointLatency() (promtoolGroup, bool, error) {
	rs := b.rule[AlertEndpointLatency]
	if len(rs) == 0 {
		return promtoolGroup{}, false, nil
	}
	var exp []expectAlert
	i := 0
	for _, e := range b.c.Endpoints {
		sel := map[string]string{}
		if e.Selector != "" {
			ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector("{" + e.Selector + "}")
			if err != nil {
				return promtoolGroup{}, false, fmt.Errorf("endpoint %q selector: %w", e.Key, err)
			}
			for _, m := range ms {
				sel[m.Name] = m.Value
			}
		}
		with := func(id string) map[string]string {
			l := tid(id)
			for k, v := range sel {
				l[k] = v
			}
			return l
		}
		b.buckets(e.Series, with("baseline"), 20, slowDesign(e.Latency, false))
		reg := slowDesign(e.Latency, true)
		b.buckets(e.Series, with("regressed"), 20, reg)
		for _, lb := range e.Latency {
			x, err := b.expect(rs[i], tid("regressed"), reg[lb.Le])
			if err != nil {
				return promtoolGroup{}, false, err
			}
			exp = append(exp, x)
			i++
		}
	}
	b.vus("baseline", "regressed")
	return b.group(AlertEndpointLatency+" fires per endpoint and quantile when too many requests are slower than the band edge", AlertEndpointLatency, exp...), true, nil
}

func (b *testBuilder) failedSeries(id string, reqPerSec, ratio float64) {
	b.add(failed, tid(id, c6.ConditionLabel, c6.ConditionZero), linear(reqPerSec*(1-ratio)))
	if ratio > 0 {
		b.add(failed, tid(id, c6.ConditionLabel, c6.ConditionNonzero), linear(reqPerSec*ratio))
	}
}

func (b *testBuilder) errorDesign() (base, reg float64) {
	if b.c.Errors.Zero {
		return 0, 0.02
	}
	return b.c.Errors.Ratio / 4, math.Min(b.c.Errors.Ratio*4+0.02, 0.5)
}

func (b *testBuilder) requestsFailing() (promtoolGroup, bool, error) {
	rs := b.rule[AlertRequestsFailing]
	if len(rs) == 0 {
		return promtoolGroup{}, false, nil
	}
	rate := 40.0
	base, reg := b.errorDesign()
	b.failedSeries("baseline", rate, base)
	b.failedSeries("regressed", rate, reg)
	if b.hasUnmatched() {
		b.failedSeries(unmatched, rate, reg)
	}
	v := reg
	if b.c.Errors.Zero {
		v = rate * reg * b.c.Window.Seconds() // failed requests in one window
	}
	e, err := b.expect(rs[0], tid("regressed"), v)
	return b.group(AlertRequestsFailing+" fires on failed requests beyond the envelope's error budget", AlertRequestsFailing, e), true, err
}

func (b *testBuilder) saturation() (promtoolGroup, bool, error) {
	rs := b.rule[AlertSaturation]
	if len(rs) == 0 {
		return promtoolGroup{}, false, nil
	}
	t := b.c.Throughput
	low := b.throughputSeries()
	base, reg := b.errorDesign()
	b.failedSeries("baseline", round2(t.Mean), base)
	b.failedSeries("regressed", low, reg)
	b.vus("baseline", "regressed")
	v := low
	if t.FloorPerVU > 0 {
		v = low / float64(b.c.VUs)
	}
	e, err := b.expect(rs[0], tid("regressed"), v)
	return b.group(AlertSaturation+" fires when throughput falls while requests fail", AlertSaturation, e), true, err
}

func (b *testBuilder) exporterDown() (promtoolGroup, bool, error) {
	rs := b.rule[AlertExporterDown]
	if len(rs) == 0 {
		return promtoolGroup{}, false, nil
	}
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector("{" + b.o.ExporterSelector + "}")
	if err != nil {
		return promtoolGroup{}, false, fmt.Errorf("exporter selector %q: %w", b.o.ExporterSelector, err)
	}
	l := map[string]string{}
	for _, m := range ms {
		if m.Type != labels.MatchEqual {
			return promtoolGroup{}, false, nil // only equality selectors give a test series
		}
		l[m.Name] = m.Value
	}
	up := func(inst string) map[string]string {
		m := map[string]string{"instance": inst}
		for k, v := range l {
			m[k] = v
		}
		return m
	}
	b.add("up", up("healthy:19466"), constant(1))
	b.add("up", up("broken:19466"), constant(0))
	e, err := b.expect(rs[0], up("broken:19466"), 0)
	return b.group(AlertExporterDown+" fires for a target that is down and not for a healthy one", AlertExporterDown, e), true, err
}

func (b *testBuilder) noTraffic() (promtoolGroup, bool, error) {
	rs := b.rule[AlertNoTraffic]
	if len(rs) == 0 {
		return promtoolGroup{}, false, nil
	}
	b.add(reqs, tid("baseline"), linear(round2(b.c.Throughput.Mean)))
	b.add(iters, tid("regressed"), linear(1))
	b.vus("baseline", "regressed")
	e, err := b.expect(rs[0], tid("regressed"), float64(max(b.c.VUs, 1)))
	return b.group(AlertNoTraffic+" fires when VUs are active but no requests are counted", AlertNoTraffic, e), true, err
}
