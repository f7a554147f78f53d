package backtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/template"
)

// The rule evaluation below follows Prometheus's rules package (v3:
// Group.Eval, AlertingRule.Eval, RecordingRule.Eval) step for step: the
// same queries through the same PromQL engine, the same pending → firing
// → resolved transitions with for and keep_firing_for, recorded series
// and ALERTS written back for later rules, stale markers for series a
// rule stopped returning. It is a copy rather than a use of that package
// because the package's Group and Manager link Prometheus's notifier,
// configuration and service discovery (the Azure, GCP and Kubernetes
// SDKs), which would otherwise ship in every command of the binary. The
// package's test checks it against Prometheus's own rule manager on the
// same series.

var (
	errDuplicateAlertLabelSet     = errors.New("vector contains metrics with the same labelset after applying alert labels")
	errDuplicateRecordingLabelSet = errors.New("vector contains metrics with the same labelset after applying rule labels")
)

type alertState int

const (
	stateInactive alertState = iota
	statePending
	stateFiring
)

func (s alertState) String() string {
	switch s {
	case statePending:
		return "pending"
	case stateFiring:
		return "firing"
	}
	return "inactive"
}

// resolvedRetention is how long Prometheus keeps a resolved alert.
const resolvedRetention = 15 * time.Minute

type alert struct {
	labels          labels.Labels
	state           alertState
	activeAt        time.Time
	resolvedAt      time.Time
	keepFiringSince time.Time
}

type rule struct {
	name       string // record or alert name
	alerting   bool
	expr       string // the parsed expression, printed (what Prometheus queries)
	hold       time.Duration
	keepFiring time.Duration
	labels     labels.Labels
	active     map[uint64]*alert
	previous   map[string]labels.Labels // series returned by the last evaluation
}

type ruleGroup struct {
	file, name  string
	interval    time.Duration
	queryOffset time.Duration
	limit       int
	rules       []*rule
}

// loadGroups reads rule files as Prometheus's rule manager loads them:
// rulefmt validation, group labels under rule labels, interval defaulting
// to the evaluation step. Groups come back sorted by file, then name.
func loadGroups(files []string, interval time.Duration, logger *slog.Logger) ([]*ruleGroup, error) {
	p := parser.NewParser(parser.Options{})
	var out []*ruleGroup
	for _, fn := range files {
		rgs, errs := rulefmt.ParseFile(fn, false, model.UTF8Validation, p, logger)
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		for _, rg := range rgs.Groups {
			g := &ruleGroup{file: fn, name: rg.Name, interval: interval, limit: rg.Limit}
			if rg.Interval != 0 {
				g.interval = time.Duration(rg.Interval)
			}
			if rg.QueryOffset != nil {
				g.queryOffset = time.Duration(*rg.QueryOffset)
			}
			for _, r := range rg.Rules {
				expr, err := p.ParseExpr(r.Expr)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", fn, err)
				}
				m := map[string]string{}
				maps.Copy(m, rg.Labels)
				maps.Copy(m, r.Labels)
				rl := &rule{name: r.Record, expr: expr.String(), labels: labels.FromMap(m), previous: map[string]labels.Labels{}}
				if r.Alert != "" {
					rl.name, rl.alerting = r.Alert, true
					rl.hold, rl.keepFiring = time.Duration(r.For), time.Duration(r.KeepFiringFor)
					rl.active = map[uint64]*alert{}
				}
				g.rules = append(g.rules, rl)
			}
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].file != out[j].file {
			return out[i].file < out[j].file
		}
		return out[i].name < out[j].name
	})
	return out, nil
}

// ruleEngine evaluates groups over a memStore.
type ruleEngine struct {
	engine *promql.Engine
	store  *memStore
}

func (e *ruleEngine) query(ctx context.Context, qs string, t time.Time) (promql.Vector, error) {
	q, err := e.engine.NewInstantQuery(ctx, e.store, nil, qs, t)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		return v, nil
	case promql.Scalar:
		return promql.Vector{{T: v.T, F: v.V, Metric: labels.EmptyLabels()}}, nil
	default:
		return nil, errors.New("rule result is not a vector or scalar")
	}
}

// evalGroup evaluates each rule of g at ts in order, writing its samples
// back before the next rule runs, as Group.Eval does.
func (e *ruleEngine) evalGroup(ctx context.Context, g *ruleGroup, ts time.Time) error {
	for _, rl := range g.rules {
		var vec promql.Vector
		var err error
		if rl.alerting {
			vec, err = e.evalAlerting(ctx, rl, g, ts)
		} else {
			vec, err = e.evalRecording(ctx, rl, g, ts)
		}
		if err != nil {
			return fmt.Errorf("rule %s: %w", rl.name, err)
		}
		returned := make(map[string]labels.Labels, len(rl.previous))
		var buf []byte
		for _, s := range vec {
			if s.H != nil {
				return fmt.Errorf("rule %s: native histogram results are not supported", rl.name)
			}
			if err := e.store.Append(s.Metric, s.T, s.F); err != nil {
				return fmt.Errorf("rule %s: storing %s: %w", rl.name, s.Metric, err)
			}
			buf = s.Metric.Bytes(buf[:0])
			returned[string(buf)] = s.Metric
		}
		stale := ts.Add(-g.queryOffset).UnixMilli()
		for k, lset := range rl.previous {
			if _, ok := returned[k]; !ok {
				// Prometheus ignores a stale marker it cannot append.
				_ = e.store.Append(lset, stale, math.Float64frombits(value.StaleNaN))
			}
		}
		rl.previous = returned
	}
	return nil
}

func (e *ruleEngine) evalRecording(ctx context.Context, rl *rule, g *ruleGroup, ts time.Time) (promql.Vector, error) {
	vec, err := e.query(ctx, rl.expr, ts.Add(-g.queryOffset))
	if err != nil {
		return nil, err
	}
	lb := labels.NewBuilder(labels.EmptyLabels())
	for i := range vec {
		lb.Reset(vec[i].Metric)
		lb.Set(model.MetricNameLabel, rl.name)
		rl.labels.Range(func(l labels.Label) { lb.Set(l.Name, l.Value) })
		vec[i].Metric = lb.Labels()
	}
	if vec.ContainsSameLabelset() {
		return nil, errDuplicateRecordingLabelSet
	}
	if g.limit > 0 && len(vec) > g.limit {
		return nil, fmt.Errorf("exceeded limit of %d with %d series", g.limit, len(vec))
	}
	return vec, nil
}

func (e *ruleEngine) evalAlerting(ctx context.Context, rl *rule, g *ruleGroup, ts time.Time) (promql.Vector, error) {
	res, err := e.query(ctx, rl.expr, ts.Add(-g.queryOffset))
	if err != nil {
		return nil, err
	}
	lb := labels.NewBuilder(labels.EmptyLabels())
	current := make(map[uint64]*alert, len(res))
	for _, smpl := range res {
		lb.Reset(smpl.Metric)
		lb.Del(model.MetricNameLabel)
		rl.labels.Range(func(l labels.Label) { lb.Set(l.Name, e.expand(ctx, rl, smpl, ts, l.Value)) })
		lb.Set(model.AlertNameLabel, rl.name)
		lbs := lb.Labels()
		h := lbs.Hash()
		if _, ok := current[h]; ok {
			return nil, errDuplicateAlertLabelSet
		}
		current[h] = &alert{labels: lbs, state: statePending, activeAt: ts}
	}
	for h, a := range current {
		if old, ok := rl.active[h]; ok && old.state != stateInactive {
			continue
		}
		rl.active[h] = a
	}
	var vec promql.Vector
	numActive := 0
	at := ts.Add(-g.queryOffset)
	for h, a := range rl.active {
		if _, ok := current[h]; !ok {
			keep := false
			if a.state == stateFiring && rl.keepFiring > 0 {
				if a.keepFiringSince.IsZero() {
					a.keepFiringSince = ts
				}
				keep = ts.Sub(a.keepFiringSince) < rl.keepFiring
			}
			if a.state == statePending || (!a.resolvedAt.IsZero() && ts.Sub(a.resolvedAt) > resolvedRetention) {
				delete(rl.active, h)
			}
			if a.state != stateInactive && !keep {
				a.state = stateInactive
				a.resolvedAt = ts
			}
			if !keep {
				continue
			}
		} else {
			a.keepFiringSince = time.Time{}
		}
		numActive++
		if a.state == statePending && ts.Sub(a.activeAt) >= rl.hold {
			a.state = stateFiring
		}
		vec = append(vec, rl.alertSample(a, at), rl.forStateSample(a, at))
	}
	if g.limit > 0 && numActive > g.limit {
		clear(rl.active)
		return nil, fmt.Errorf("exceeded limit of %d with %d alerts", g.limit, numActive)
	}
	return vec, nil
}

// expand expands a templated alert label as Prometheus does; plain
// values (all the generated rules' labels) are returned as they are.
func (e *ruleEngine) expand(ctx context.Context, rl *rule, smpl promql.Sample, ts time.Time, text string) string {
	if !strings.Contains(text, "{{") {
		return text
	}
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	data := template.AlertTemplateData(smpl.Metric.Map(), map[string]string{}, "", smpl)
	tmpl := template.NewTemplateExpander(ctx, defs+text, "__alert_"+rl.name, data, model.Time(ts.UnixMilli()),
		func(ctx context.Context, q string, t time.Time) (promql.Vector, error) { return e.query(ctx, q, t) }, nil, nil)
	out, err := tmpl.Expand()
	if err != nil {
		return fmt.Sprintf("<error expanding template: %s>", err)
	}
	return out
}

// alertSample is the ALERTS series of an active alert.
func (rl *rule) alertSample(a *alert, ts time.Time) promql.Sample {
	lb := labels.NewBuilder(rl.labels)
	a.labels.Range(func(l labels.Label) { lb.Set(l.Name, l.Value) })
	lb.Set(model.MetricNameLabel, "ALERTS")
	lb.Set(model.AlertNameLabel, rl.name)
	lb.Set("alertstate", a.state.String())
	return promql.Sample{Metric: lb.Labels(), T: ts.UnixMilli(), F: 1}
}

// forStateSample is the ALERTS_FOR_STATE series of an active alert.
func (rl *rule) forStateSample(a *alert, ts time.Time) promql.Sample {
	lb := labels.NewBuilder(rl.labels)
	a.labels.Range(func(l labels.Label) { lb.Set(l.Name, l.Value) })
	lb.Set(model.MetricNameLabel, "ALERTS_FOR_STATE")
	lb.Set(model.AlertNameLabel, rl.name)
	return promql.Sample{Metric: lb.Labels(), T: ts.UnixMilli(), F: float64(a.activeAt.Unix())}
}
