package dashboards

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/rules"
)

var update = flag.Bool("update", false, "rewrite the committed dashboards/ from the builders")

// committedDir is the generated, committed folder at the module root.
const committedDir = "../../dashboards"

// model is the generic JSON view the tests inspect: what Grafana reads,
// not the SDK's Go types.
type model map[string]any

func built(t *testing.T, opts Options) map[string]model {
	t.Helper()
	ds, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]model{}
	for _, d := range ds {
		b, err := d.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var m model
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", d.File, err)
		}
		out[d.File] = m
	}
	return out
}

// testEnvelope has one band of each kind, enough for every
// envelope-dependent branch.
func testEnvelope() *envelope.Envelope {
	return &envelope.Envelope{
		Name:       "test",
		Throughput: envelope.Spread{N: 3, Mean: 56.1, Min: 55.97, Max: 56.28},
		Latency: envelope.Latency{
			Median: envelope.Band{Min: 6, Max: 7},
			P95:    envelope.Band{Min: 357.7, Max: 405.3},
			P99:    envelope.Band{Min: 922.7, Max: 937.2},
		},
		Endpoints: map[string]envelope.Endpoint{
			"actor_get": {Metric: "actor_get", P95: envelope.Band{Max: 20}, P99: envelope.Band{Max: 40}},
		},
		ECS: &envelope.ECS{
			CPUUtilisation:       envelope.Band{Max: 0.6},
			MemoryUtilisation:    envelope.Band{Max: 0.5},
			CPUSecondsPerRequest: envelope.Band{Max: 0.002},
		},
		Errors:    envelope.Errors{Total: 20000},
		Tolerance: figures.DefaultTolerance(),
	}
}

func allVariants(t *testing.T) map[string]map[string]model {
	return map[string]map[string]model{
		"no envelope":   built(t, Options{}),
		"with envelope": built(t, Options{Envelope: testEnvelope()}),
	}
}

// panels flattens rows and panels (including panels nested in rows).
func panels(m model) []map[string]any { return flatPanels(m) }

type query struct {
	where string // dashboard / panel / refId, for messages
	expr  string
}

// queries lists every PromQL expression of a dashboard: panel targets,
// annotations and query variables (label_values(...) unwrapped).
func queries(file string, m model) []query {
	var out []query
	for _, q := range modelQueries(file, m) {
		out = append(out, query{q.Where, q.Expr})
	}
	return out
}

// Stand-ins for Grafana's variables. The durations are odd on purpose so
// the tests can tell which variable a range came from.
var substitutions = map[string]string{
	"__rate_interval": "61s",
	"__range":         "3601s",
	"__interval":      "15s",
	"testid":          "run-1",
	"scenario":        "default",
	"endpoint":        "GET /",
	"trend":           "k6_actor_get_seconds",
}

func substitute(expr string) string { return Substitute(expr, substitutions) }

func parse(t *testing.T, q query) parser.Expr {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(substitute(q.expr))
	if err != nil {
		t.Fatalf("%s: %v\n%s", q.where, err, q.expr)
	}
	return e
}

func TestQueriesParse(t *testing.T) {
	for name, dbs := range allVariants(t) {
		n := 0
		for file, m := range dbs {
			for _, q := range queries(file, m) {
				parse(t, q)
				n++
			}
		}
		if n < 80 {
			t.Errorf("%s: only %d queries found; the walk is missing some", name, n)
		}
	}
}

// known lists every series a query may read: catalogue descriptors (with
// a histogram's classic _bucket/_sum/_count), recording rules, and the
// series Prometheus itself writes.
func known() map[string]bool {
	k := map[string]bool{"ALERTS": true, promUp: true, promScrapeDuration: true, promScrapeSamples: true}
	// ECS and CloudWatch descriptors are listed by their own functions
	// until registered into All.
	descs := append(append(catalogue.All(), catalogue.ECSDescs()...), catalogue.CloudWatchDescs()...)
	for _, d := range descs {
		k[d.Name] = true
		if d.Type == catalogue.HistogramType {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				k[d.Name+s] = true
			}
		}
	}
	for _, p := range phases {
		k[phaseDesc(p).Name] = true
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			k[phaseDesc(p).Name+s] = true
		}
	}
	for _, r := range catalogue.RecordingRules() {
		k[r] = true
	}
	return k
}

func metricNames(e parser.Expr) []string {
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == "__name__" {
					name = m.Value
				}
			}
			names = append(names, name)
		}
		return nil
	})
	return names
}

func TestMetricsExistInCatalogue(t *testing.T) {
	k := known()
	trend := substitutions["trend"]
	for _, dbs := range allVariants(t) {
		for file, m := range dbs {
			for _, q := range queries(file, m) {
				for _, n := range metricNames(parse(t, q)) {
					// $trend names a custom trend series listed by the
					// envelope gauges' metric label, a SeriesName output.
					if n == trend || n == trend+"_bucket" {
						continue
					}
					if !k[n] {
						t.Errorf("%s: series %q is neither in the catalogue nor a recording rule", q.where, n)
					}
				}
			}
		}
	}
}

// The unknown-metric check must catch a typo.
func TestMetricCheckCatchesUnknown(t *testing.T) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(`sum(rate(k6_http_req_total[1m]))`)
	if err != nil {
		t.Fatal(err)
	}
	if n := metricNames(e); len(n) != 1 || known()[n[0]] {
		t.Fatalf("k6_http_req_total should be unknown, got %v", n)
	}
}

// Rates use $__rate_interval; whole-run figures use $__range; nothing
// else hard-codes a window except the 15s step of the run-length query.
func TestRangesUseGrafanaIntervals(t *testing.T) {
	allowed := map[time.Duration]bool{61 * time.Second: true, 3601 * time.Second: true}
	for file, m := range built(t, Options{}) {
		for _, q := range queries(file, m) {
			parser.Inspect(parse(t, q), func(n parser.Node, path []parser.Node) error {
				switch x := n.(type) {
				case *parser.MatrixSelector:
					if !allowed[x.Range] {
						t.Errorf("%s: range [%s] is not $__rate_interval or $__range", q.where, x.Range)
					}
					if len(path) > 0 {
						if c, ok := path[len(path)-1].(*parser.Call); ok && (c.Func.Name == "rate" || c.Func.Name == "increase") && x.Range != 61*time.Second {
							t.Errorf("%s: %s over [%s], want $__rate_interval", q.where, c.Func.Name, x.Range)
						}
					}
				case *parser.SubqueryExpr:
					if x.Range != 3601*time.Second {
						t.Errorf("%s: subquery over [%s], want $__range", q.where, x.Range)
					}
				}
				return nil
			})
		}
	}
}

// No quantile is ever averaged: histogram_quantile always reads a sum of
// rates (or of cumulative values), and no avg/avg_over_time wraps a
// quantile or reads a ratio.
func TestQuantilesFromSummedHistograms(t *testing.T) {
	n := 0
	for _, dbs := range allVariants(t) {
		for file, m := range dbs {
			for _, q := range queries(file, m) {
				parser.Inspect(parse(t, q), func(node parser.Node, path []parser.Node) error {
					switch x := node.(type) {
					case *parser.Call:
						if x.Func.Name == "irate" {
							t.Errorf("%s: irate shows one sample pair; use rate", q.where)
						}
						if x.Func.Name == "rate" || x.Func.Name == "increase" {
							// Only counters and histograms have rates.
							for _, name := range metricNames(x.Args[0]) {
								d, ok := catalogue.Lookup(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count"))
								isPhase := strings.HasPrefix(name, "k6_http_req_") || name == substitutions["trend"] || strings.HasPrefix(name, substitutions["trend"])
								if !isPhase && !strings.HasSuffix(name, "_total") && (!ok || d.Type != catalogue.HistogramType) {
									t.Errorf("%s: rate of %s, which is neither a counter nor a histogram", q.where, name)
								}
							}
						}
						if x.Func.Name != "histogram_quantile" {
							return nil
						}
						n++
						agg, ok := unparen(x.Args[1]).(*parser.AggregateExpr)
						if !ok || agg.Op != parser.SUM {
							t.Errorf("%s: histogram_quantile over %s, want sum by (...)", q.where, x.Args[1])
						}
						for _, p := range path {
							if a, ok := p.(*parser.AggregateExpr); ok && a.Op == parser.AVG {
								t.Errorf("%s: quantile averaged", q.where)
							}
						}
					case *parser.AggregateExpr:
						if x.Op == parser.AVG {
							t.Errorf("%s: avg() in a dashboard query", q.where)
						}
					}
					return nil
				})
			}
		}
	}
	if n == 0 {
		t.Fatal("no histogram_quantile found")
	}
}

func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// Grid, ids, units, descriptions, datasources and refIds, per panel.
func TestPanelConventions(t *testing.T) {
	for name, dbs := range allVariants(t) {
		for file, m := range dbs {
			ids := map[float64]bool{}
			type rect struct{ x, y, w, h float64 }
			var rects []rect
			for _, p := range panels(m) {
				where := fmt.Sprintf("%s %s panel %v %q", name, file, p["id"], p["title"])
				id, ok := p["id"].(float64)
				if !ok || id <= 0 || ids[id] {
					t.Errorf("%s: id missing, zero or duplicate", where)
				}
				ids[id] = true
				g, ok := p["gridPos"].(map[string]any)
				if !ok {
					t.Errorf("%s: no gridPos", where)
					continue
				}
				r := rect{g["x"].(float64), g["y"].(float64), g["w"].(float64), g["h"].(float64)}
				if r.w <= 0 || r.h <= 0 || r.x < 0 || r.x+r.w > 24 {
					t.Errorf("%s: gridPos %+v outside the 24-column grid", where, r)
				}
				for _, o := range rects {
					if r.x < o.x+o.w && o.x < r.x+r.w && r.y < o.y+o.h && o.y < r.y+r.h {
						t.Errorf("%s: gridPos %+v overlaps %+v", where, r, o)
					}
				}
				rects = append(rects, r)
				if p["type"] == "row" {
					if r.w != 24 || r.x != 0 {
						t.Errorf("%s: row not full width", where)
					}
					continue
				}
				if d, _ := p["description"].(string); len(d) < 20 {
					t.Errorf("%s: description missing or too short", where)
				}
				fc, _ := p["fieldConfig"].(map[string]any)
				def, _ := fc["defaults"].(map[string]any)
				if u, _ := def["unit"].(string); u == "" {
					t.Errorf("%s: no unit", where)
				}
				if dsUID(p["datasource"]) != "${datasource}" {
					t.Errorf("%s: panel datasource %v, want ${datasource}", where, p["datasource"])
				}
				ts, _ := p["targets"].([]any)
				if len(ts) == 0 {
					t.Errorf("%s: no targets", where)
				}
				refs := map[string]bool{}
				for i, tt := range ts {
					tm := tt.(map[string]any)
					ref, _ := tm["refId"].(string)
					if ref != refID(i) || refs[ref] {
						t.Errorf("%s: target %d refId %q, want %q", where, i, ref, refID(i))
					}
					refs[ref] = true
					if dsUID(tm["datasource"]) != "${datasource}" {
						t.Errorf("%s: target %s datasource %v", where, ref, tm["datasource"])
					}
				}
			}
		}
	}
}

func dsUID(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["uid"].(string)
	return s
}

// Dashboard-level conventions: stable uids, the datasource variable, the
// filter variables from label_values, and links to each other.
func TestDashboardConventions(t *testing.T) {
	want := map[string]string{
		"overview.json": UIDOverview, "endpoints.json": UIDEndpoints, "runs.json": UIDRuns,
		"ecs.json": UIDECS, "exporter.json": UIDExporter,
	}
	dbs := built(t, Options{})
	if len(dbs) != len(want) {
		t.Fatalf("%d dashboards, want %d", len(dbs), len(want))
	}
	for file, m := range dbs {
		if m["uid"] != want[file] {
			t.Errorf("%s: uid %v, want %s", file, m["uid"], want[file])
		}
		vars := m["templating"].(map[string]any)["list"].([]any)
		first := vars[0].(map[string]any)
		if first["name"] != "datasource" || first["type"] != "datasource" || first["query"] != "prometheus" || first["label"] != "Data source" {
			t.Errorf("%s: first variable %v, want the prometheus datasource variable", file, first)
		}
		for _, v := range vars[1:] {
			vm := v.(map[string]any)
			if q, _ := vm["query"].(string); !strings.HasPrefix(q, "label_values(") {
				t.Errorf("%s: variable %v query %q not label_values", file, vm["name"], q)
			}
		}
		links, _ := m["links"].([]any)
		if len(links) == 0 {
			t.Errorf("%s: no links", file)
		} else if l := links[0].(map[string]any); l["type"] != "dashboards" || !slices.Contains(l["tags"].([]any), any(tag)) {
			t.Errorf("%s: link %v does not list the envelope dashboards", file, l)
		}
		if tags, _ := m["tags"].([]any); !slices.Contains(tags, any(tag)) {
			t.Errorf("%s: not tagged %q, so the links would miss it", file, tag)
		}
	}
	// The filters exist where they apply: the envelope first, then the
	// tests it matched.
	for file, names := range map[string][]string{
		"overview.json":  {"datasource", "envelope", "testid", "scenario"},
		"endpoints.json": {"datasource", "envelope", "testid", "scenario", "endpoint", "trend"},
	} {
		var got []string
		for _, v := range dbs[file]["templating"].(map[string]any)["list"].([]any) {
			got = append(got, v.(map[string]any)["name"].(string))
		}
		if !slices.Equal(got, names) {
			t.Errorf("%s: variables %v, want %v", file, got, names)
		}
	}
}

// The same input gives the same bytes, and the committed dashboards/ are
// what the builders produce (go generate leaves no drift).
func TestGoldenCommitted(t *testing.T) {
	a, err := Build(Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Build(Options{})
	for i := range a {
		ja, _ := a[i].JSON()
		jb, _ := b[i].JSON()
		if !bytes.Equal(ja, jb) {
			t.Fatalf("%s: two builds differ", a[i].File)
		}
		path := filepath.Join(committedDir, a[i].File)
		if *update {
			if err := os.WriteFile(path, ja, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go generate ./... or go test -update)", err)
		}
		if !bytes.Equal(ja, want) {
			t.Errorf("%s differs from the builders; run go generate ./... (or go test ./internal/dashboards -update)", path)
		}
	}
}

// Without an envelope no panel has an envelope threshold; an envelope
// the alert rules refuse is refused with the rules' reason.
func TestThresholdsNeedAnEnvelope(t *testing.T) {
	without := built(t, Options{})["overview.json"]
	for _, p := range panels(without) {
		title, _ := p["title"].(string)
		if !strings.Contains(title, "envelope band") && title != "Throughput" && title != "p95 latency" {
			continue
		}
		fc, _ := p["fieldConfig"].(map[string]any)
		def, _ := fc["defaults"].(map[string]any)
		if th, ok := def["thresholds"]; ok {
			t.Errorf("%q without an envelope: thresholds %v, want none", title, th)
		}
	}
	env := testEnvelope()
	env.Errors.Total = 0
	if _, err := Build(Options{Envelope: env}); err == nil || !strings.Contains(err.Error(), "errors.total") {
		t.Errorf("an envelope without errors.total: %v, want the rules' error naming it", err)
	}
}

// The layout wraps a panel that would pass column 24 onto a new line.
func TestBoardWraps(t *testing.T) {
	tests := []struct {
		widths []uint32
		want   [][2]uint32 // x, y per panel
	}{
		{[]uint32{12, 12, 24}, [][2]uint32{{0, 1}, {12, 1}, {0, 5}}},
		{[]uint32{12, 24}, [][2]uint32{{0, 1}, {0, 5}}},
		{[]uint32{8, 8, 10}, [][2]uint32{{0, 1}, {8, 1}, {0, 5}}},
	}
	for _, tc := range tests {
		b := &board{}
		b.row("r")
		for _, w := range tc.widths {
			b.place(w, 4, nil)
		}
		for i, c := range b.cells[1:] {
			if c.pos.X != tc.want[i][0] || c.pos.Y != tc.want[i][1] {
				t.Errorf("widths %v: panel %d at (%d,%d), want %v", tc.widths, i, c.pos.X, c.pos.Y, tc.want[i])
			}
		}
	}
}

func TestRefID(t *testing.T) {
	for i, want := range map[int]string{0: "A", 25: "Z", 26: "AA", 27: "AB", 51: "AZ", 52: "BA"} {
		if got := refID(i); got != want {
			t.Errorf("refID(%d) = %s, want %s", i, got, want)
		}
	}
}

// The alert panels and annotation select alerts by name: every alert the
// rules pack generates must match, or it would be missing from them.
func TestAlertNamesMatchGeneratedRules(t *testing.T) {
	// With ECS figures the ECS alert group is generated too.
	env := e2eEnvelope()
	env.ECS = &envelope.ECS{TaskCPUUnits: 1024, TaskMemoryMiB: 2048, Tasks: 2,
		CPUUtilisation: envelope.Band{Min: 0.3, Max: 0.5, N: 3}, MemoryUtilisation: envelope.Band{Min: 0.4, Max: 0.5, N: 3},
		CPUSecondsPerRequest: envelope.Band{Min: 0.001, Max: 0.002, N: 3}}
	rf, _, err := rules.Generate(env, rules.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("^(?:" + alertNames + ")$")
	n, ecs := 0, 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if strings.HasPrefix(r.Alert, "ECS") {
				ecs++
			}
			if !re.MatchString(r.Alert) {
				t.Errorf("alert %s (group %s) does not match %q", r.Alert, g.Name, alertNames)
			}
		}
	}
	if n == 0 || ecs == 0 {
		t.Fatalf("%d alerts generated, %d ECS alerts; want both kinds", n, ecs)
	}
	if re.MatchString("NodeFilesystemAlmostOutOfSpace") {
		t.Errorf("%q matches unrelated alerts", alertNames)
	}
}

// Every $variable a query or title uses is defined by its dashboard (or
// is one of Grafana's own), else Grafana would send it literally.
func TestVariablesDefined(t *testing.T) {
	builtin := map[string]bool{"__rate_interval": true, "__range": true, "__interval": true, "1": true}
	for name, dbs := range allVariants(t) {
		for file, m := range dbs {
			defined := map[string]bool{}
			for _, v := range m["templating"].(map[string]any)["list"].([]any) {
				defined[v.(map[string]any)["name"].(string)] = true
			}
			var texts []query
			texts = append(texts, queries(file, m)...)
			for _, p := range panels(m) {
				texts = append(texts, query{fmt.Sprintf("%s panel %v title", file, p["id"]), fmt.Sprint(p["title"])})
				if r, ok := p["repeat"].(string); ok {
					texts = append(texts, query{fmt.Sprintf("%s panel %v repeat", file, p["id"]), "$" + r})
				}
			}
			for _, q := range texts {
				for _, ref := range varRef.FindAllString(q.expr, -1) {
					v := strings.Trim(ref, "${}")
					if !builtin[v] && !defined[v] {
						t.Errorf("%s %s: $%s is not a variable of this dashboard", name, q.where, v)
					}
				}
			}
		}
	}
}
