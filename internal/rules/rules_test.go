package rules

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/promtest"
)

func testEnvelopes(t *testing.T) map[string]*envelope.Envelope {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.envelope.*")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata envelopes: %v", err)
	}
	out := map[string]*envelope.Envelope{}
	for _, p := range paths {
		env, err := envelope.ReadFile(p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		out[filepath.Base(p)] = env
	}
	return out
}

var (
	camel        = regexp.MustCompile(`^([A-Z]+[a-z0-9]+)+$`)
	summaryStyle = regexp.MustCompile(`^[A-Z].+\.$`)
)

// Every envelope in testdata yields rules that Prometheus's own parser
// accepts and that follow the mixin conventions mixtool lints for.
func TestGeneratedRulesParseAndFollowConventions(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for name, env := range testEnvelopes(t) {
		t.Run(name, func(t *testing.T) {
			f, _, err := Generate(env, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			b, err := Marshal(env, f)
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(name, b); err != nil {
				t.Fatal(err)
			}
			alerts := 0
			for _, g := range f.Groups {
				// The envelope's name is part of every group name; the
				// rest follows the mixin limit of 40 characters.
				if len(g.Rules) > maxRulesPerGroup || !strings.Contains(g.Name, env.Name) || len(g.Name)-len(env.Name) > 40 {
					t.Errorf("group %s: %d rules, name length %d without the envelope name %q", g.Name, len(g.Rules), len(g.Name)-len(env.Name), env.Name)
				}
				for _, r := range g.Rules {
					if _, err := p.ParseExpr(r.Expr); err != nil {
						t.Errorf("%s%s: %v\n%s", r.Record, r.Alert, err, r.Expr)
					}
					if r.Alert == "" {
						continue
					}
					alerts++
					if !camel.MatchString(r.Alert) || len(r.Alert) > 40 {
						t.Errorf("alert name %q", r.Alert)
					}
					if s := r.Labels["severity"]; s != "warning" && s != "critical" && s != "info" {
						t.Errorf("%s: severity %q", r.Alert, s)
					}
					a := r.Annotations
					if !summaryStyle.MatchString(a["summary"]) || strings.Contains(a["summary"], "{{") {
						t.Errorf("%s: summary %q", r.Alert, a["summary"])
					}
					if !strings.Contains(a["description"], "$value") {
						t.Errorf("%s: description lacks the observed value: %q", r.Alert, a["description"])
					}
					if !strings.HasSuffix(a["runbook_url"], "runbook.md#"+strings.ToLower(r.Alert)) {
						t.Errorf("%s: runbook_url %q", r.Alert, a["runbook_url"])
					}
					if r.For == "" {
						t.Errorf("%s: no for", r.Alert)
					}
				}
			}
			// 8 overall alert rules, the overall median test, and one per
			// endpoint band (the median only beside a p95 or p99 band),
			// each where the envelope's runs estimate its percentile.
			est := func(endpoint string, n figures.Name) bool { return env.Support(endpoint).Estimates(n) }
			want := 6
			for _, n := range []figures.Name{figures.P95, figures.P99} {
				if est("", n) {
					want++
				}
			}
			if env.Latency.Median.Max > 0 && est("", figures.Median) {
				want++
			}
			for k, e := range env.Endpoints {
				tail := 0
				if e.P95.Max > 0 && est(k, figures.P95) {
					tail++
				}
				if e.P99.Max > 0 && est(k, figures.P99) {
					tail++
				}
				if (e.P95.Max > 0 || e.P99.Max > 0) && e.Median.Max > 0 && est(k, figures.Median) {
					tail++
				}
				want += tail
			}
			if alerts != want {
				t.Errorf("%d alert rules, want %d", alerts, want)
			}
		})
	}
}

// Endpoint names reach PromQL as exact label matchers and alert labels,
// whatever characters they hold.
func TestEndpointNamesAreEscaped(t *testing.T) {
	env := testEnvelopes(t)["odd-names.envelope.json"]
	f, c, err := Generate(env, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	p := parser.NewParser(parser.Options{})
	found := map[string]bool{}
	for _, r := range f.Alerts() {
		if r.Alert != AlertEndpointLatency {
			continue
		}
		key := ""
		for _, e := range c.Endpoints {
			if templateText(e.Key, "") == r.Labels["endpoint"] {
				key = e.Key
			}
		}
		ep := env.Endpoints[key]
		if ep.Tag == "" {
			found[key] = true
			continue
		}
		expr, err := p.ParseExpr(r.Expr)
		if err != nil {
			t.Fatal(err)
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				for _, m := range vs.LabelMatchers {
					if m.Name == ep.Tag && m.Type == labels.MatchEqual && m.Value == ep.Value {
						found[key] = true
					}
				}
			}
			return nil
		})
	}
	for _, e := range c.Endpoints {
		if !found[e.Key] {
			t.Errorf("endpoint %q: no selector matching its value exactly", e.Key)
		}
	}
	// The template-like name renders literally in the description.
	tl, err := newTestLabels(env)
	if err != nil {
		t.Fatal(err)
	}
	b := &testBuilder{c: c, tl: tl}
	for _, r := range f.Alerts() {
		if r.Labels["endpoint"] == templateText("tmpl {{ .Evil }} }}", "") {
			e, err := b.expect(r, map[string]string{"testid": "t"}, 0.5)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(e.ExpAnnotations["description"], "endpoint tmpl {{ .Evil }} }}:") || e.ExpLabels["endpoint"] != "tmpl {{ .Evil }} }}" {
				t.Errorf("description %q", e.ExpAnnotations["description"])
			}
		}
	}
}

func TestMissingFieldsAreNamed(t *testing.T) {
	seed := testEnvelopes(t)["seed.envelope.json"]
	cases := []struct {
		field string
		edit  func(e *envelope.Envelope)
	}{
		{"throughput.mean", func(e *envelope.Envelope) { e.Throughput.Mean = 0 }},
		{"throughput.min", func(e *envelope.Envelope) { e.Throughput.Min = 0 }},
		{"latency.p95.max", func(e *envelope.Envelope) { e.Latency.P95.Max = 0 }},
		{"latency.p99.max", func(e *envelope.Envelope) { e.Latency.P99.Max = 0 }},
		{"tolerance.window", func(e *envelope.Envelope) { e.Tolerance.Window = "" }},
		{`endpoints["auth_login"].metric`, func(e *envelope.Envelope) {
			ep := e.Endpoints["auth_login"]
			ep.Metric = ""
			e.Endpoints["auth_login"] = ep
		}},
		{`endpoints["auth_login"].p95.max`, func(e *envelope.Envelope) {
			ep := e.Endpoints["auth_login"]
			ep.P95.Max = 0
			e.Endpoints["auth_login"] = ep
		}},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			e := *seed
			e.Endpoints = map[string]envelope.Endpoint{}
			for k, v := range seed.Endpoints {
				e.Endpoints[k] = v
			}
			tc.edit(&e)
			_, _, err := Generate(&e, DefaultOptions())
			if err == nil || !errors.Is(err, ErrMissingField) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %v, want one naming %s", err, tc.field)
			}
		})
	}
	t.Run("tag not exposed", func(t *testing.T) {
		e := *seed
		e.Endpoints = map[string]envelope.Endpoint{"x": {Tag: "endpoint", Value: "x", P95: envelope.Band{Max: 10}}}
		_, _, err := Generate(&e, DefaultOptions())
		if err == nil || !strings.Contains(err.Error(), `endpoints["x"].tag`) {
			t.Fatalf("error %v", err)
		}
	})
}

// The calibrated bounds follow the documented formulas, recomputed here
// from the seed envelope's figures.
func TestCalibrationFormulas(t *testing.T) {
	c, err := Calibrate(testEnvelopes(t)["seed.envelope.json"])
	if err != nil {
		t.Fatal(err)
	}
	near := func(name string, got, want, rel float64) {
		t.Helper()
		if math.Abs(got-want) > rel*math.Abs(want) {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	near("z", c.Z, 3.0902, 1e-4)
	// Throughput window: a 10% drop below the band min is 50.37 req/s. At
	// 3m the floor (51.49) sits 2.06 σ above it, short of the 2.326 the
	// calibrator asks for (every evaluation of `for`); at 4m (51.70) 2.80 σ.
	if c.Throughput.Window != 4*time.Minute || c.Throughput.WindowStr != "4m" {
		t.Errorf("throughput window %v %q, want 4m", c.Throughput.Window, c.Throughput.WindowStr)
	}
	sigma := math.Sqrt(0.0024*0.0024 + 1/(56.1*240))
	near("throughput floor", c.Throughput.Floor, 55.97*0.95*(1-3.0902*sigma), 1e-3)
	near("separation", c.Throughput.Separation, 2.80, 2e-3)
	near("floor per VU", c.Throughput.FloorPerVU, c.Throughput.Floor/50, 1e-3)
	// χ²(0.999, 9) = 27.877; Wilson–Hilferty is within 1%.
	near("cv factor", c.CV.Factor, math.Sqrt(27.877/9), 0.01)
	near("cv bound", c.CV.Bound, math.Sqrt(0.0024*0.0024+1/(56.1*60))*math.Sqrt(27.877/9), 0.01)
	// p95 edge: 405.3 ms × 1.1 = 445.83 ms, p99 937.2 × 1.1 = 1030.92 ms.
	if c.Latency[0].Le != "0.44583" || c.Latency[1].Le != "1.03092" {
		t.Errorf("le edges %q %q", c.Latency[0].Le, c.Latency[1].Le)
	}
	// Expected bound at the seed rate: 5% + z·√(.0475/16830) + corr/16830.
	n := 56.1 * 300
	near("p95 expected bound", c.Latency[0].ExpectedBound, 0.05+3.0902*math.Sqrt(0.0475/n)+((3.0902*3.0902-1)*0.9/6+0.5)/n, 1e-5)
	// The median test follows p95 and p99 (Latency[0] stays p95): more
	// than half the window slower than the median band top × 1.1, with
	// the binomial bound at t = 0.5 (its skew term vanishes, c = 0.5).
	if len(c.Latency) != 3 || c.Latency[2].Quantile != MedianQuantile || c.Latency[2].Tail != 0.5 {
		t.Fatalf("overall tests %+v, want p95, p99, median", c.Latency)
	}
	near("median edge", c.Latency[2].Threshold, 0.00715, 1e-9) // 6.5 ms × 1.1
	near("median expected bound", c.Latency[2].ExpectedBound, 0.5+3.0902*math.Sqrt(0.25/n)+0.5/n, 1e-5)
	// Endpoints get a median test exactly when they have a median band
	// (actor_get has none in this envelope).
	env := testEnvelopes(t)["seed.envelope.json"]
	for _, e := range c.Endpoints {
		has := false
		for _, b := range e.Latency {
			if b.Quantile == MedianQuantile {
				has = true
				near(e.Key+" median edge", b.Threshold, math.Round(env.Endpoints[e.Key].Median.Max*1.1*1000)/1e6, 1e-9)
			}
		}
		if want := env.Endpoints[e.Key].Median.Max > 0; has != want {
			t.Errorf("endpoint %s: median test %v, want %v", e.Key, has, want)
		}
	}
}

// The throughput window is the shortest candidate that separates a
// 2×tolerance drop from the floor, capped by the tolerance window.
func TestThroughputWindow(t *testing.T) {
	seed := testEnvelopes(t)["seed.envelope.json"]
	cases := []struct {
		name   string
		edit   func(e *envelope.Envelope)
		want   time.Duration
		minSep float64 // separation the chosen window must reach
	}{
		{"seed", func(e *envelope.Envelope) {}, 4 * time.Minute, DetectZ},
		// Twenty times the rate: counting noise shrinks, 1m suffices.
		{"busy", func(e *envelope.Envelope) {
			e.Throughput.Mean *= 20
			e.Throughput.Min *= 20
			e.Throughput.Max *= 20
		}, time.Minute, DetectZ},
		// A wider tolerance makes a 2× drop easier to see.
		{"wide tolerance", func(e *envelope.Envelope) { e.Tolerance.ThroughputDrop = 0.10 }, time.Minute, DetectZ},
		// No tolerance: no drop to separate, so the latency window.
		{"zero tolerance", func(e *envelope.Envelope) { e.Tolerance.ThroughputDrop = 0 }, 5 * time.Minute, math.Inf(-1)},
		// Never longer than the tolerance window, even when that misses.
		{"capped", func(e *envelope.Envelope) { e.Tolerance.Window = "2m" }, 2 * time.Minute, math.Inf(-1)},
		// A noisy envelope (CV 3%): no window separates, so the latency window.
		{"noisy", func(e *envelope.Envelope) { e.Throughput.CV = 0.03 }, 5 * time.Minute, math.Inf(-1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := *seed
			tc.edit(&e)
			c, err := Calibrate(&e)
			if err != nil {
				t.Fatal(err)
			}
			tp := c.Throughput
			if tp.Window != tc.want {
				t.Errorf("window %v, want %v (separation %g)", tp.Window, tc.want, tp.Separation)
			}
			if tp.Separation < tc.minSep {
				t.Errorf("separation %g below %g", tp.Separation, tc.minSep)
			}
			if tp.Window < c.Window && tp.Separation < DetectZ {
				t.Errorf("chose %v below the tolerance window with separation %g", tp.Window, tp.Separation)
			}
			rf, _, err := Generate(&e, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			want := "rate(k6_http_reqs_total[" + tp.WindowStr + "])) < " + fmtFloat(tp.Floor)
			found := false
			for _, g := range rf.Groups {
				for _, r := range g.Rules {
					if r.Alert == AlertThroughputLow {
						found = strings.Contains(r.Expr, want)
					}
				}
			}
			if !found {
				t.Errorf("%s does not read %q", AlertThroughputLow, want)
			}
			checkSteps(t, c, rf)
		})
	}
}

// checkSteps: the growing window's steps run shortest first up to the
// tolerance window, hold W with its floor, each shorter one with a floor
// above the dropped run and lower than the next (more counting noise);
// the alert reads each step's window against its floor, and cuts each
// branch off once the next window is full.
func checkSteps(t *testing.T, c *Calibration, rf *RuleFile) {
	t.Helper()
	tp := c.Throughput
	hasW := false
	for i, st := range tp.Steps {
		if st.Window > c.Window {
			t.Errorf("step %v beyond the tolerance window %v", st.Window, c.Window)
		}
		if st.Window == tp.Window {
			hasW = st.Floor == tp.Floor
		} else if st.Separation <= 0 || st.Window > tp.Window && st.Floor < tp.Floor {
			t.Errorf("step %+v (W %v, floor %g)", st, tp.Window, tp.Floor)
		}
		if i > 0 && (st.Window <= tp.Steps[i-1].Window || st.Floor < tp.Steps[i-1].Floor) {
			t.Errorf("steps out of order: %+v after %+v", st, tp.Steps[i-1])
		}
	}
	if !hasW {
		t.Errorf("steps %+v lack W = %v at floor %g", tp.Steps, tp.Window, tp.Floor)
	}
	var expr string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == AlertThroughputLow {
				expr = r.Expr
			}
		}
	}
	for i, st := range tp.Steps {
		if !strings.Contains(expr, "rate(k6_http_reqs_total["+st.WindowStr+"])) < "+fmtFloat(st.Floor)) {
			t.Errorf("%s does not read the %s window against %g", AlertThroughputLow, st.WindowStr, st.Floor)
		}
		if i+1 < len(tp.Steps) && !strings.Contains(expr, "unless on") {
			t.Errorf("%s: the %s branch is not cut off", AlertThroughputLow, st.WindowStr)
		}
	}
}

func TestLeValue(t *testing.T) {
	for in, want := range map[float64]string{1: "1.0", 0.446: "0.446", 2.5: "2.5", math.Inf(1): "+Inf", 10: "10.0"} {
		if got := LeValue(in); got != want {
			t.Errorf("LeValue(%g) = %q, want %q", in, got, want)
		}
	}
}

// promtool, as CI runs it: the lint must be clean and the generated unit
// tests must pass, for every testdata envelope and for the committed
// rules/ folder.
func TestPromtool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs promtool")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	promtool := func(t *testing.T, args ...string) {
		t.Helper()
		if out, err := promtest.Promtool(t, args...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	dirs := map[string]string{}
	for name, env := range testEnvelopes(t) {
		dir := t.TempDir()
		if _, err := WriteDir(dir, env, DefaultOptions(), FormatPrometheus); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dirs[name] = dir
	}
	if _, err := os.Stat(filepath.Join(root, "rules", RulesFile)); err == nil {
		dirs["committed rules/"] = filepath.Join(root, "rules")
	}
	// One promtool run per command over every folder: each `go tool`
	// start costs seconds.
	var ruleFiles, testFiles []string
	for _, dir := range dirs {
		ruleFiles = append(ruleFiles, filepath.Join(dir, RulesFile))
		testFiles = append(testFiles, filepath.Join(dir, TestFile))
	}
	sort.Strings(ruleFiles)
	sort.Strings(testFiles)
	promtool(t, append([]string{"check", "rules", "--lint=all", "--lint-fatal"}, ruleFiles...)...)
	promtool(t, append([]string{"test", "rules"}, testFiles...)...)
}

// go generate must not change committed files: two generations of every
// output are byte-identical.
func TestDeterministic(t *testing.T) {
	for name, env := range testEnvelopes(t) {
		var outs [2][]string
		for i := range outs {
			dir := t.TempDir()
			paths, err := WriteDir(dir, env, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range paths {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				outs[i] = append(outs[i], string(b))
			}
		}
		for j := range outs[0] {
			if outs[0][j] != outs[1][j] {
				t.Errorf("%s: output %d differs between two generations", name, j)
			}
		}
	}
}
