package rules_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/rules"
)

// agreementEnvelopes are envelopes derived from real k6 runs: the demo's
// (five summary exports, custom trends per endpoint), one computed here
// from three NDJSON runs of the history fixture grouped by the method tag
// (tag-selected endpoints of http_req_duration beside the custom trends),
// and each again with other latency tolerances, 0 (the threshold is the
// band max) and 0.25.
func agreementEnvelopes(t *testing.T) map[string]*envelope.Envelope {
	t.Helper()
	demo, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := 1; i <= 3; i++ {
		paths = append(paths, fixtures.Path(t, fmt.Sprintf("k6/history-v2.2.0/run-%02d.ndjson.gz", i)))
	}
	in, err := figures.ReadFiles(paths, figures.LoadOptions(0, "method"))
	if err != nil {
		t.Fatal(err)
	}
	hist, err := envelope.Compute(in, envelope.Options{Name: "history-by-method", GroupBy: "method"})
	if err != nil {
		t.Fatal(err)
	}
	tags := 0
	for _, ep := range hist.Endpoints {
		if ep.Metric == "" && ep.Trend() == k6.HTTPReqDuration {
			tags++
		}
	}
	if tags == 0 {
		t.Fatalf("the history envelope grouped by method has no tag-selected endpoint: %v", hist.Endpoints)
	}
	out := map[string]*envelope.Envelope{}
	for _, env := range []*envelope.Envelope{demo, hist} {
		out[env.Name] = env
		for _, rise := range []float64{0, 0.25} {
			e := *env
			e.Name = fmt.Sprintf("%s-rise-%g", env.Name, rise)
			e.Tolerance.LatencyRise = rise
			out[e.Name] = &e
		}
	}
	return out
}

// selectedBuckets parses every generated expression with Prometheus's
// parser and returns each `le` matched, by histogram family (the series
// name without _bucket).
func selectedBuckets(t *testing.T, f *rules.RuleFile) map[string]map[string]bool {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	out := map[string]map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			expr, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s%s: %v", r.Record, r.Alert, err)
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				name := vs.Name
				var le *labels.Matcher
				for _, m := range vs.LabelMatchers {
					switch m.Name {
					case model.MetricNameLabel:
						name = m.Value
					case "le":
						le = m
					}
				}
				if le == nil {
					return nil
				}
				if le.Type != labels.MatchEqual || !strings.HasSuffix(name, "_bucket") {
					t.Errorf("%s%s: le matcher %s on %s: only le=\"…\" on a classic bucket series can be held to the served buckets", r.Record, r.Alert, le, name)
					return nil
				}
				fam := strings.TrimSuffix(name, "_bucket")
				if out[fam] == nil {
					out[fam] = map[string]bool{}
				}
				out[fam][le.Value] = true
				return nil
			})
		}
	}
	return out
}

// servedBuckets runs the exporter with env and one sample of every trend
// the envelope's bands are measured on, and returns the upper bounds of
// each classic histogram family it serves, as Prometheus 3 stores the le
// label.
func servedBuckets(t *testing.T, env *envelope.Envelope) map[string]map[string]bool {
	t.Helper()
	s, err := exporter.New(exporter.Config{Envelope: env})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.IngestPoint(&k6.Point{Metric: k6.HTTPReqDuration, Time: now, Value: 1, Tags: map[string]string{"testid": "agree"}})
	for _, ep := range env.Endpoints {
		if ep.Metric != "" {
			s.DefineMetric(&k6.MetricDef{Name: ep.Metric, Type: k6.Trend, Contains: k6.Time})
			s.IngestPoint(&k6.Point{Metric: ep.Metric, Time: now, Value: 1, Tags: map[string]string{"testid": "agree"}})
		}
	}
	mfs, err := s.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, b := range m.GetHistogram().GetBucket() {
				if out[mf.GetName()] == nil {
					out[mf.GetName()] = map[string]bool{}
				}
				out[mf.GetName()][rules.LeValue(b.GetUpperBound())] = true
			}
		}
	}
	return out
}

// Every `le` a generated rule selects is a bucket bound the exporter
// serves for the same envelope: an alert reading a bucket nobody serves
// would never fire. +Inf is always served.
func TestRuleBucketsAreServed(t *testing.T) {
	envs := agreementEnvelopes(t)
	names := make([]string, 0, len(envs))
	for n := range envs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		env := envs[name]
		t.Run(name, func(t *testing.T) {
			f, _, err := rules.Generate(env, rules.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			selected := selectedBuckets(t, f)
			served := servedBuckets(t, env)
			checked := 0
			for fam, les := range selected {
				for le := range les {
					if le == "+Inf" {
						continue
					}
					checked++
					if _, err := strconv.ParseFloat(le, 64); err != nil {
						t.Errorf("%s: le=%q is not a number", fam, le)
					}
					if !served[fam][le] {
						t.Errorf("%s_bucket{le=%q} is selected by a rule but the exporter serves no such bucket (served: %v)", fam, le, sortedKeys(served[fam]))
					}
				}
			}
			// The overall p95, p99 and median thresholds at least, and
			// one per endpoint band.
			if want := 3 + len(env.Endpoints); checked < want {
				t.Errorf("only %d band thresholds selected, want at least %d: %v", checked, want, selected)
			}
		})
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
