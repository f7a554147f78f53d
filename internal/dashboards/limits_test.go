package dashboards

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/rules"
)

var (
	baselineOnce sync.Once
	baselineEnv  *envelope.Envelope
	baselineErr  error
)

// baselineEnvelope is the envelope of the three real 6-minute baseline
// runs of the fixtures, computed once.
func baselineEnvelope(t *testing.T) *envelope.Envelope {
	t.Helper()
	paths := fixtures.Baselines(t)
	baselineOnce.Do(func() {
		runs, err := figures.ReadFiles(paths, figures.LoadOptions(0, ""))
		if err != nil {
			baselineErr = err
			return
		}
		baselineEnv, baselineErr = envelope.Compute(runs, envelope.Options{Name: "baseline-mix"})
	})
	if baselineErr != nil {
		t.Fatal(baselineErr)
	}
	return baselineEnv
}

// alertNumbers reads, from the alert rules generated for env, the
// numbers each alert fires at: the throughput floor of the calibrated
// window, each overall latency quantile's bucket bound, and the allowed
// error ratio (0 when any failure alerts).
type alertNumbers struct {
	floor   float64
	latency map[string]float64 // by the rule's quantile label
	errors  float64
}

var (
	floorRE   = regexp.MustCompile(`rate\(k6_http_reqs_total\[(\w+)\]\)\) < ([0-9.]+)`)
	leRE      = regexp.MustCompile(`le="([0-9.e+-]+)"`)
	errRatioR = regexp.MustCompile(`\) > \(([0-9.e-]+) \+ `)
)

func generatedAlerts(t *testing.T, env *envelope.Envelope) alertNumbers {
	t.Helper()
	rf, cal, err := rules.Generate(env, rules.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := alertNumbers{latency: map[string]float64{}, errors: -1}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			switch r.Alert {
			case rules.AlertThroughputLow:
				for _, m := range floorRE.FindAllStringSubmatch(r.Expr, -1) {
					if m[1] == cal.Throughput.WindowStr {
						a.floor = num(m[2])
					}
				}
			case rules.AlertLatencyHigh:
				m := leRE.FindStringSubmatch(r.Expr)
				if m == nil {
					t.Fatalf("no le bound in %s", r.Expr)
				}
				a.latency[r.Labels["quantile"]] = num(m[1])
			case rules.AlertRequestsFailing:
				if m := errRatioR.FindStringSubmatch(r.Expr); m != nil {
					a.errors = num(m[1])
				} else if strings.Contains(r.Expr, "> 0 or") {
					a.errors = 0
				}
			}
		}
	}
	if a.floor == 0 || len(a.latency) == 0 || a.errors < 0 {
		t.Fatalf("generated alerts lack a number: %+v", a)
	}
	return a
}

// steps are a panel's threshold steps: the base colour, then each value
// and its colour upwards.
type steps struct {
	base   string
	values []float64
	colors []string
}

func panelSteps(t *testing.T, m model, typ, title string) steps {
	t.Helper()
	for _, p := range panels(m) {
		if p["title"] != title || p["type"] != typ {
			continue
		}
		def := p["fieldConfig"].(map[string]any)["defaults"].(map[string]any)
		th, _ := def["thresholds"].(map[string]any)
		if th == nil {
			t.Fatalf("%s %q has no thresholds", typ, title)
		}
		var s steps
		for _, st := range th["steps"].([]any) {
			sm := st.(map[string]any)
			v, ok := sm["value"].(float64)
			if !ok {
				s.base = sm["color"].(string)
				continue
			}
			s.values = append(s.values, v)
			s.colors = append(s.colors, sm["color"].(string))
		}
		return s
	}
	t.Fatalf("no %s panel %q", typ, title)
	return steps{}
}

// colorAt is the colour Grafana gives v: that of the highest step at or
// below it, else the base.
func (s steps) colorAt(v float64) string {
	c := s.base
	for i, x := range s.values {
		if v >= x {
			c = s.colors[i]
		}
	}
	return c
}

// redAt is the value of the step where the panel turns red (from below
// for a ceiling, the first non-red step above the red base for a floor).
func (s steps) redAt(floor bool) (float64, bool) {
	if floor {
		if s.base != alertColor || len(s.values) == 0 {
			return 0, false
		}
		return s.values[0], true
	}
	for i, c := range s.colors {
		if c == alertColor {
			return s.values[i], true
		}
	}
	return 0, false
}

// A dashboard built from the real baseline envelope turns each panel red
// exactly where the generated alert fires, and never at a band edge.
func TestThresholdsAreTheAlerts(t *testing.T) {
	env := baselineEnvelope(t)
	alerts := generatedAlerts(t, env)
	dbs := built(t, Options{Envelope: env})
	ov, ep := dbs["overview.json"], dbs["endpoints.json"]
	tpMin := env.Throughput.Min
	bandTop := map[string]float64{
		"0.5": envelope.Seconds(env.Latency.Median.Max), "0.95": envelope.Seconds(env.Latency.P95.Max), "0.99": envelope.Seconds(env.Latency.P99.Max),
	}
	// The throughput floor lies below the band (the point of the test).
	if !(alerts.floor < tpMin) {
		t.Fatalf("floor %g not below the band's bottom %g", alerts.floor, tpMin)
	}
	t.Logf("throughput band bottom %g, alert floor %g; latency alerts %v, band tops %v; errors %g", tpMin, alerts.floor, alerts.latency, bandTop, alerts.errors)
	cases := []struct {
		typ, title string
		m          model
		floor      bool    // red below the number instead of above
		want       float64 // the alert's number
		band       float64 // the band edge beside it, 0 for none
	}{
		{"stat", "Throughput", ov, true, alerts.floor, tpMin},
		{"timeseries", "Throughput against the envelope band", ov, false, alerts.floor, tpMin},
		{"stat", "p95 latency", ov, false, alerts.latency["0.95"], bandTop["0.95"]},
		{"timeseries", "p50 latency against the envelope band", ov, false, alerts.latency["0.5"], bandTop["0.5"]},
		{"timeseries", "p95 latency against the envelope band", ov, false, alerts.latency["0.95"], bandTop["0.95"]},
		{"timeseries", "p99 latency against the envelope band", ov, false, alerts.latency["0.99"], bandTop["0.99"]},
		{"stat", "Error ratio", ov, false, alerts.errors, 0},
		{"timeseries", "Error ratio", ov, false, alerts.errors, 0},
		{"timeseries", "Error ratio by endpoint", ep, false, alerts.errors, 0},
	}
	for _, c := range cases {
		s := panelSteps(t, c.m, c.typ, c.title)
		name := c.typ + " " + c.title
		if c.want == 0 {
			// Any failure alerts: red at the smallest positive ratio.
			got, ok := s.redAt(false)
			if !ok || got <= 0 || got > 1e-6 {
				t.Errorf("%s: red at %v (%v), want any failure red", name, got, ok)
			}
		} else if got, ok := s.redAt(c.floor && c.typ == "stat"); !ok || got != c.want {
			t.Errorf("%s: red at %v (%v), want the alert's %v; steps %+v", name, got, ok, c.want, s)
		}
		if c.band == 0 {
			continue
		}
		if got := s.colorAt(c.band); got == alertColor {
			t.Errorf("%s: the band edge %v is %s; steps %+v", name, c.band, got, s)
		}
		if c.typ != "stat" {
			continue
		}
		// A stat's value: red just beyond the alert, not inside it.
		beyond, inside := c.want*1.001, c.want*0.999
		if c.floor {
			beyond, inside = inside, beyond
		}
		if s.colorAt(beyond) != alertColor || s.colorAt(inside) == alertColor {
			t.Errorf("%s: %v is %s, %v is %s; want red only beyond the alert's %v", name, beyond, s.colorAt(beyond), inside, s.colorAt(inside), c.want)
		}
		if math.Abs(c.band-c.want) < 1e-9 {
			t.Errorf("%s: band edge and alert coincide at %v: the test cannot tell them apart", name, c.want)
		}
	}
	// No step of any panel is red or orange at a band edge.
	edges := []float64{env.Throughput.Min, env.Throughput.Max}
	for _, b := range []envelope.Band{env.Latency.Median, env.Latency.P95, env.Latency.P99} {
		edges = append(edges, envelope.Seconds(b.Min), envelope.Seconds(b.Max))
	}
	for file, m := range dbs {
		for _, p := range panels(m) {
			fc, _ := p["fieldConfig"].(map[string]any)
			def, _ := fc["defaults"].(map[string]any)
			th, _ := def["thresholds"].(map[string]any)
			if th == nil {
				continue
			}
			for _, st := range th["steps"].([]any) {
				sm := st.(map[string]any)
				v, ok := sm["value"].(float64)
				if !ok || (sm["color"] != alertColor && sm["color"] != "orange") {
					continue
				}
				for _, e := range edges {
					if math.Abs(v-e) < 1e-9 {
						t.Errorf("%s %q: %s at the band edge %v", file, p["title"], sm["color"], e)
					}
				}
			}
		}
	}
}

// The Runs table colours p95 and p99 red as a share of the latency
// alert's threshold, the exporter's threshold gauge of that percentile,
// never of the band's top.
func TestRunsTableRedAtTheAlert(t *testing.T) {
	runs := built(t, Options{})["runs.json"]
	var table map[string]any
	for _, p := range panels(runs) {
		if p["title"] == "Runs compared" {
			table = p
		}
	}
	if table == nil {
		t.Fatal("no Runs compared table")
	}
	exprs := map[string]string{}
	for _, q := range table["targets"].([]any) {
		qm := q.(map[string]any)
		exprs[qm["refId"].(string)] = qm["expr"].(string)
	}
	cols := map[string]string{"p95 / alert threshold": "95", "p99 / alert threshold": "99"}
	refs := map[string]string{"p95 / alert threshold": "G", "p99 / alert threshold": "H"}
	for _, tr := range table["transformations"].([]any) {
		tm := tr.(map[string]any)
		if tm["id"] != "organize" {
			continue
		}
		for ref, name := range tm["options"].(map[string]any)["renameByName"].(map[string]any) {
			if _, ok := cols[name.(string)]; ok && ref != "Value #"+refs[name.(string)] {
				t.Errorf("column %q is %s, want Value #%s", name, ref, refs[name.(string)])
			}
		}
	}
	for col, pct := range cols {
		e := exprs[refs[col]]
		want := fmt.Sprintf(`scalar(max(%s{`, catalogue.EnvelopeLatencyThreshold.Name)
		if !strings.Contains(e, want) || !strings.Contains(e, fmt.Sprintf(`percentile=%q`, pct)) || strings.Contains(e, catalogue.EnvelopeLatencyMax.Name) {
			t.Errorf("%s: %s, want a share of the p%s threshold gauge", col, e, pct)
		}
		red := false
		for _, o := range table["fieldConfig"].(map[string]any)["overrides"].([]any) {
			om := o.(map[string]any)
			if om["matcher"].(map[string]any)["options"] != col {
				continue
			}
			for _, prop := range om["properties"].([]any) {
				pm := prop.(map[string]any)
				if pm["id"] != "thresholds" {
					continue
				}
				for _, st := range pm["value"].(map[string]any)["steps"].([]any) {
					sm := st.(map[string]any)
					if sm["color"] == alertColor && sm["value"] == 1.0 {
						red = true
					}
				}
			}
		}
		if !red {
			t.Errorf("%s: not red from 100%%", col)
		}
	}
}

// The ECS panels turn red where the generated ECS alerts fire: the
// saturation ratio of the limits, and the CPU seconds per request above
// the band; the band tops are neutral lines.
func TestECSThresholdsAreTheAlerts(t *testing.T) {
	env := e2eEnvelope()
	env.ECS = &envelope.ECS{TaskCPUUnits: 1024, TaskMemoryMiB: 2048, Tasks: 2,
		CPUUtilisation: envelope.Band{Min: 0.3, Max: 0.5, N: 3}, MemoryUtilisation: envelope.Band{Min: 0.4, Max: 0.45, N: 3},
		CPUSecondsPerRequest: envelope.Band{Min: 0.001, Max: 0.002, N: 3}}
	rf, _, err := rules.Generate(env, rules.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	limitRE := regexp.MustCompile(`>=? ([0-9.e-]+)`)
	alert := map[string]float64{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if m := limitRE.FindStringSubmatch(r.Expr); m != nil && (r.Alert == rules.AlertECSCPUSaturated || r.Alert == rules.AlertECSMemoryNearLimit || r.Alert == rules.AlertECSCPUPerRequestHigh) {
				v, err := strconv.ParseFloat(m[1], 64)
				if err != nil {
					t.Fatal(err)
				}
				alert[r.Alert] = v
			}
		}
	}
	ecs := built(t, Options{Envelope: env})["ecs.json"]
	for _, c := range []struct {
		title, alert string
		band         float64
	}{
		{"Task CPU utilisation of the limit", rules.AlertECSCPUSaturated, env.ECS.CPUUtilisation.Max},
		{"Task memory utilisation of the limit", rules.AlertECSMemoryNearLimit, env.ECS.MemoryUtilisation.Max},
		{"CPU seconds per request", rules.AlertECSCPUPerRequestHigh, env.ECS.CPUSecondsPerRequest.Max},
	} {
		want, ok := alert[c.alert]
		if !ok {
			t.Fatalf("no %s alert generated", c.alert)
		}
		s := panelSteps(t, ecs, "timeseries", c.title)
		if got, ok := s.redAt(false); !ok || got != want {
			t.Errorf("%s: red at %v (%v), want the %s alert's %v; steps %+v", c.title, got, ok, c.alert, want, s)
		}
		if got := s.colorAt(c.band); got == alertColor || got == "transparent" {
			t.Errorf("%s: the band top %v is %s, want a neutral line", c.title, c.band, got)
		}
	}
}
