// Package rules generates the Prometheus recording and alerting rules that
// encode a baseline envelope, their promtool unit tests and the Prometheus
// Operator PrometheusRule resource, and validates them with Prometheus's
// own rule-file parser.
//
// Generation is a fixed list of group builders run in order (builders).
// Each builder looks at the envelope and returns its rule groups, or none
// when it has nothing to say (an envelope without ECS figures yields no
// ECS group). A new concern adds its builder to that list.
//
// Builders read the calibrated thresholds from Calibration (calibrate.go)
// rather than recomputing them, so every alert uses the same formula.
package rules

import (
	"fmt"

	"github.com/envelope-dev/envelope/internal/envelope"
)

// Rule is one recording or alerting rule, in rule-file field order.
type Rule struct {
	Record        string            `yaml:"record,omitempty" json:"record,omitempty"`
	Alert         string            `yaml:"alert,omitempty" json:"alert,omitempty"`
	Expr          string            `yaml:"expr" json:"expr"`
	For           string            `yaml:"for,omitempty" json:"for,omitempty"`
	KeepFiringFor string            `yaml:"keep_firing_for,omitempty" json:"keep_firing_for,omitempty"`
	Labels        map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	Annotations   map[string]string `yaml:"annotations,omitempty" json:"annotations,omitempty"`
}

// RuleGroup is one rule group.
type RuleGroup struct {
	Name     string `yaml:"name" json:"name"`
	Interval string `yaml:"interval,omitempty" json:"interval,omitempty"`
	Rules    []Rule `yaml:"rules" json:"rules"`
}

// RuleFile is the top level of a Prometheus rule file.
type RuleFile struct {
	Groups []RuleGroup `yaml:"groups" json:"groups"`
	// unestimated are the percentiles left without an alert, which the
	// file's header names (Calibration.Unestimated).
	unestimated []Unestimated
}

// groupBuilder returns the groups one concern contributes (none is fine).
type groupBuilder func(env *envelope.Envelope, c *Calibration, o Options) ([]RuleGroup, error)

// builder is one concern of the rule file.
type builder struct {
	name  string
	build groupBuilder
}

// builders are the concerns in generation order: the order of the groups
// in the rule file.
func builders() []builder {
	return []builder{
		{"recording", buildRecording},
		{"alerts", buildAlerts},
		{"endpoints", buildEndpointAlerts},
		{"ecs", buildECS},
	}
}

// Options are the deployment choices that are not part of the envelope.
type Options struct {
	// ExporterSelector selects the exporter's scrape target, for the
	// missing-data alert: `job="envelope-exporter"`.
	ExporterSelector string
	// RunbookURL is the base of every runbook_url annotation; the alert's
	// anchor is appended.
	RunbookURL string
	// Interval is the evaluation interval of every group.
	Interval string
	// TopologyLabels are kept by every aggregation besides testid (and
	// name, le where the expression needs them); nil means
	// DefaultTopologyLabels (job, namespace, cluster), an empty list
	// keeps testid alone.
	TopologyLabels []string
}

// DefaultOptions are the options of the committed rules.
func DefaultOptions() Options {
	return Options{
		ExporterSelector: `job="envelope-exporter"`,
		RunbookURL:       "https://github.com/envelope-dev/envelope/blob/main/docs/runbook.md",
		Interval:         "15s",
	}
}

// Generate builds every group for env.
func Generate(env *envelope.Envelope, o Options) (*RuleFile, *Calibration, error) {
	if o.ExporterSelector == "" || o.RunbookURL == "" || o.Interval == "" {
		d := DefaultOptions()
		if o.ExporterSelector == "" {
			o.ExporterSelector = d.ExporterSelector
		}
		if o.RunbookURL == "" {
			o.RunbookURL = d.RunbookURL
		}
		if o.Interval == "" {
			o.Interval = d.Interval
		}
	}
	c, err := Calibrate(env)
	if err != nil {
		return nil, nil, err
	}
	f := &RuleFile{unestimated: c.Unestimated}
	seen := map[string]bool{}
	for _, b := range builders() {
		gs, err := b.build(env, c, o)
		if err != nil {
			return nil, nil, fmt.Errorf("rules %s: %w", b.name, err)
		}
		for _, g := range gs {
			if len(g.Rules) == 0 {
				continue
			}
			if seen[g.Name] {
				return nil, nil, fmt.Errorf("rules %s: duplicate group name %q", b.name, g.Name)
			}
			seen[g.Name] = true
			if g.Interval == "" {
				g.Interval = o.Interval
			}
			f.Groups = append(f.Groups, g)
		}
	}
	return f, c, nil
}

// Alerts returns every alerting rule of f, in file order.
func (f *RuleFile) Alerts() []Rule {
	var out []Rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}
