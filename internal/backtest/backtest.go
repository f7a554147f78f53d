// Package backtest replays k6 runs through Prometheus's own rule engine:
// it feeds a run's points to a real exporter.Server scrape by scrape,
// gathers what the exporter serves at each virtual 15 s scrape (the
// families the rules read; histograms as classic buckets and native
// histograms), stores it in memory, evaluates the rule files with Prometheus's PromQL engine
// at virtual time, and reports which alerts fired and when.
package backtest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
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
	// Unmatched says that the envelope's match selects none of the
	// run's series, so its scoped rules judged nothing (an alert that
	// did not fire says nothing about the run); "" when it selects them.
	Unmatched string `json:"unmatched,omitempty"`
}

// Report is what `envelope backtest --format json` prints.
type Report struct {
	Runs []Run `json:"runs"`
}

// prepared is a run read and its exporter fed nothing yet, ready to be
// scraped into a store.
type prepared struct {
	r        *replay
	up       labels.Labels
	lastSlot int
	groups   []*ruleGroup
}

// prepare loads the rule files and reads the run file's points.
func prepare(env *envelope.Envelope, ruleFiles []string, path string, o *Options) (*prepared, error) {
	if o.Scrape <= 0 {
		o.Scrape = 15 * time.Second
	}
	if o.ExporterSelector == "" {
		o.ExporterSelector = rules.DefaultOptions().ExporterSelector
	}
	if _, err := rules.Calibrate(env); err != nil {
		return nil, err
	}
	groups, err := loadGroups(ruleFiles, o.Scrape, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	r, err := newReplay(env, o.Scrape, familiesRead(groups))
	if err != nil {
		return nil, err
	}
	if err := r.read(path, o.SkipWarmup); err != nil {
		return nil, err
	}
	up, err := upLabels(o.ExporterSelector)
	if err != nil {
		return nil, err
	}
	return &prepared{r: r, up: up, lastSlot: r.maxSlot + int(o.Tail/o.Scrape), groups: groups}, nil
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
	pr, err := prepare(env, ruleFiles, path, &o)
	if err != nil {
		return nil, err
	}
	r, groups := pr.r, pr.groups
	store := newMemStore()
	if err := r.write(store, pr.up, pr.lastSlot); err != nil {
		return nil, fmt.Errorf("%s: storing series: %w", path, err)
	}
	e := &ruleEngine{engine: newEngine(slog.New(slog.DiscardHandler)), store: store}

	run := &Run{Source: path, DurationS: (time.Duration(r.maxSlot) * o.Scrape).Seconds(), Alerts: []Alert{}}
	if w := envelope.MatchRunsWarning(env.Match, []figures.Run{{Source: path, Tags: r.tagValues()}}); w != "" {
		run.Unmatched = "the envelope's match " + w
	}
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
		switch {
		case r.Unmatched != "" && len(r.Alerts) == 0:
			fmt.Fprintf(&b, "nothing was judged: %s\n", r.Unmatched)
			continue
		case r.Unmatched != "":
			fmt.Fprintf(&b, "nothing scoped to the envelope was judged: %s\n", r.Unmatched)
		case len(r.Alerts) == 0:
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
