package backtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	promrules "github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/simulate"
)

// tsdbAppender stores the scraped samples in a TSDB for referenceFile.
type tsdbAppender struct{ app storage.Appender }

func (a tsdbAppender) Append(l labels.Labels, t int64, v float64) error {
	_, err := a.app.Append(0, l, t, v)
	return err
}

func (a tsdbAppender) AppendHistogram(l labels.Labels, t int64, fh *histogram.FloatHistogram) error {
	_, err := a.app.AppendHistogram(0, l, t, nil, fh)
	return err
}

// referenceFile backtests with Prometheus's own rule manager over a TSDB:
// what File did before it evaluated with its own copy of the rule loop.
// The copy must give exactly the same alerts at the same times.
func referenceFile(ctx context.Context, t *testing.T, env *envelope.Envelope, ruleFiles []string, path string, o Options) *Run {
	t.Helper()
	pr, err := prepare(env, ruleFiles, path, &o)
	if err != nil {
		t.Fatal(err)
	}
	r := pr.r
	logger := slog.New(slog.DiscardHandler)
	db, err := tsdb.Open(t.TempDir(), logger, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close() //nolint:errcheck // test cleanup of a temporary TSDB
	app := db.Appender(ctx)
	if err := r.write(tsdbAppender{app}, pr.up, pr.lastSlot); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	mgr := promrules.NewManager(&promrules.ManagerOptions{
		QueryFunc:    promrules.EngineQueryFunc(newEngine(logger), db),
		AppendableV2: db,
		Queryable:    db,
		Context:      ctx,
		NotifyFunc:   func(context.Context, string, ...*promrules.Alert) {},
		Logger:       logger,
		Parser:       parser.NewParser(parser.Options{}),
	})
	groups, errs := mgr.LoadGroups(o.Scrape, labels.EmptyLabels(), "", nil, false, ruleFiles...)
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	ordered := make([]*promrules.Group, 0, len(groups))
	for _, g := range groups {
		ordered = append(ordered, g)
		for _, rl := range g.Rules() {
			if ar, ok := rl.(*promrules.AlertingRule); ok {
				ar.SetRestored(true)
			}
		}
	}
	sort.SliceStable(ordered, func(i, j int) bool {
		if ordered[i].File() != ordered[j].File() {
			return ordered[i].File() < ordered[j].File()
		}
		return ordered[i].Name() < ordered[j].Name()
	})
	run := &Run{Source: path, DurationS: (time.Duration(r.maxSlot) * o.Scrape).Seconds(), Alerts: []Alert{}}
	fired := &firing{run: run, t0: r.t0, seen: map[string]bool{}}
	for slot := 1; slot <= pr.lastSlot; slot++ {
		ts := r.t0.Add(time.Duration(slot) * o.Scrape)
		for _, g := range ordered {
			if iv := g.Interval(); iv > o.Scrape && (time.Duration(slot)*o.Scrape)%iv != 0 {
				continue
			}
			g.Eval(ctx, ts)
			for _, rl := range g.Rules() {
				if err := rl.LastError(); err != nil {
					t.Fatalf("rule %s at %s: %v", rl.Name(), ts.Sub(r.t0), err)
				}
				ar, ok := rl.(*promrules.AlertingRule)
				if !ok {
					continue
				}
				for _, a := range ar.ActiveAlerts() {
					if a.State == promrules.StateFiring {
						fired.note(ar.Name(), a.Labels, ts)
					}
				}
			}
		}
	}
	fired.sort()
	return run
}

// The backtest's rule loop against Prometheus's rule manager, on runs that
// fire the generated alerts (latency, errors, throughput) and on a rule
// file that uses what the generated rules do not: keep_firing_for, a
// query offset, group labels, a templated alert label, recording rules
// whose series vanish (stale markers) and an alert reading ALERTS.
func TestSameAlertsAsPrometheusRuleManager(t *testing.T) {
	env, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	generated := rulesFor(t, env)
	dir := t.TempDir()
	extra := filepath.Join(dir, "extra.rules.yaml")
	if err := os.WriteFile(extra, []byte(extraRules), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		name string
		o    simulate.Options
	}{
		{"baseline", simulate.Options{Seed: 21}},
		{"latency and errors", simulate.Options{Seed: 22, ErrorRate: 0.02, LatencyFactor: map[string]float64{"auth_register": 1.3, "auth_login": 1.2}}},
		{"throughput", simulate.Options{Seed: 23, ThroughputFactor: 0.8}},
	}
	ctx := context.Background()
	for _, rc := range runs {
		t.Run(rc.name, func(t *testing.T) {
			rc.o.Duration = runLength
			path := filepath.Join(t.TempDir(), "run.ndjson.gz")
			if err := simulate.WriteFile(path, env, rc.o); err != nil {
				t.Fatal(err)
			}
			for _, set := range []struct {
				name  string
				files []string
				o     Options
			}{
				{"generated rules", generated, Options{}},
				{"extra rules", []string{extra}, Options{Tail: 10 * time.Minute}},
			} {
				got, err := File(ctx, env, set.files, path, set.o)
				if err != nil {
					t.Fatal(err)
				}
				want := referenceFile(ctx, t, env, set.files, path, set.o)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: alerts differ from Prometheus's rule manager\n got: %s\nwant: %s", set.name, alertList(got), alertList(want))
				}
				t.Logf("%s: %d alerts, same as Prometheus's rule manager:%s", set.name, len(got.Alerts), alertList(got))
				if rc.name != "baseline" && len(want.Alerts) == 0 {
					t.Errorf("%s: nothing fired, the comparison shows nothing", set.name)
				}
			}
		})
	}
}

func alertList(r *Run) string {
	s := ""
	for _, a := range r.Alerts {
		s += fmt.Sprintf("\n  %s %v at %gs", a.Alertname, a.Labels, a.FirstFiringS)
	}
	return s
}

// extraRules exercise the rule-loop features the generated rules do not
// use; their thresholds sit inside the simulated runs' range so that some
// alerts fire, some resolve, and some series come and go.
const extraRules = `groups:
  - name: recorded
    labels:
      team: perf
    rules:
      - record: job:k6_http_reqs:rate1m
        expr: sum by (testid) (rate(k6_http_reqs_total[1m])) > 0
      - record: name:k6_http_reqs:rate1m
        expr: sum by (name) (rate(k6_http_reqs_total[1m])) > 5
  - name: alerts
    query_offset: 30s
    rules:
      - alert: BusyEndpoint
        expr: name:k6_http_reqs:rate1m > 8
        for: 30s
        keep_firing_for: 2m
        labels:
          severity: info
          rate_band: '{{ if gt $value 12.0 }}high{{ else }}normal{{ end }}'
      - alert: AnyTraffic
        expr: job:k6_http_reqs:rate1m > 0
        labels:
          severity: info
      - alert: TrafficGone
        expr: absent(job:k6_http_reqs:rate1m)
        for: 1m
        labels:
          severity: info
      - alert: AlertsSeen
        expr: count(ALERTS{alertstate="firing", alertname="BusyEndpoint"}) > 0
        for: 1m
        labels:
          severity: info
`
