package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"

	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/rules"
)

// rulesCommand adds `envelope rules`.
func (c *cli) rulesCommand(app *kingpin.Application) {
	cmd := app.Command("rules", "Generate the recording and alerting rules that encode an envelope, with their promtool unit tests, or the Prometheus Operator PrometheusRule resource.")
	envPath := cmd.Flag("envelope", "Envelope file (YAML or JSON).").Required().String()
	out := cmd.Flag("out", "Folder to write the rule files into.").Default("rules").String()
	formats := cmd.Flag("format", cmdline.Choices("What to write: prometheus (rule file and promtool tests), prometheusrule (Operator resource); repeatable. Default: both.", "prometheus", "prometheusrule")).Enums("prometheus", "prometheusrule")
	sel := cmd.Flag("exporter-selector", "PromQL matchers selecting the exporter's scrape target, for the exporter-down alert.").Default(rules.DefaultOptions().ExporterSelector).String()
	runbook := cmd.Flag("runbook-url", "Base URL of the runbook; each alert links to its anchor.").Default(rules.DefaultOptions().RunbookURL).String()
	topo := cmd.Flag("topology-labels", "Comma-separated labels every aggregation keeps besides testid, so runs of one testid from two clusters never merge; empty keeps testid alone.").Default(strings.Join(rules.DefaultTopologyLabels(), ",")).String()
	cmd.Action(c.Action(func() error {
		env, err := envelope.ReadFile(*envPath)
		if err != nil {
			return err
		}
		o := rules.DefaultOptions()
		o.ExporterSelector, o.RunbookURL = *sel, *runbook
		o.TopologyLabels = []string{}
		for _, l := range strings.Split(*topo, ",") {
			if l = strings.TrimSpace(l); l != "" {
				if !model.LegacyValidation.IsValidLabelName(l) {
					return fmt.Errorf("--topology-labels: %q is not a label name", l)
				}
				o.TopologyLabels = append(o.TopologyLabels, l)
			}
		}
		var fs []rules.Format
		for _, f := range *formats {
			fs = append(fs, rules.Format(f))
		}
		paths, err := rules.WriteDir(*out, env, o, fs...)
		if err != nil {
			return err
		}
		for _, p := range paths {
			c.Println(p)
		}
		return nil
	}))
}

// demoRules writes the rules of both demo envelopes.
func demoRules(_ context.Context, d *demoEnv) error {
	env, err := demo.Envelope()
	if err != nil {
		return err
	}
	dir := filepath.Join(d.Dir, "rules")
	paths, err := rules.WriteDir(dir, env, rules.DefaultOptions())
	if err != nil {
		return err
	}
	d.Printf("rules: %d files in %s (rule file, promtool tests, PrometheusRule)\n", len(paths), dir)
	second, err := demo.SecondEnvelope()
	if err != nil {
		return err
	}
	dir2 := filepath.Join(dir, second.Name)
	if _, err := rules.WriteDir(dir2, second, rules.DefaultOptions()); err != nil {
		return err
	}
	d.Printf("rules of the second envelope: %s (load both folders into one Prometheus)\n", dir2)
	return nil
}
