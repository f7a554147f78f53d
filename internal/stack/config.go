package stack

import (
	"bytes"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// ExporterJob is the scrape job name of the exporter, the one the
// generated rules' missing-data alert selects (job="envelope-exporter"),
// in compose, Kubernetes (the Service name) and here alike.
const ExporterJob = "envelope-exporter"

// Job is one scrape job.
type Job struct {
	Name     string
	Groups   []TargetGroup
	Interval time.Duration // 0 = the global scrape interval
}

// TargetGroup is a static config: targets sharing target labels.
type TargetGroup struct {
	Targets []string          // host:port
	Labels  map[string]string // target labels added to every series
}

// PrometheusConfig is the Prometheus configuration the stack writes: the
// same shape as deploy/prometheus/prometheus.yml of the compose stack
// (native histograms over protobuf, classic buckets kept, the rules, the
// Alertmanager) with loopback addresses.
type PrometheusConfig struct {
	ScrapeInterval     time.Duration // default 5s
	EvaluationInterval time.Duration // default 5s
	RuleFiles          []string      // paths or globs, relative to the config file
	Alertmanagers      []string      // host:port
	Jobs               []Job
}

// yaml shapes, in Prometheus's field names and order.
type (
	promFile struct {
		Global        promGlobal   `yaml:"global"`
		RuleFiles     []string     `yaml:"rule_files,omitempty"`
		Alerting      *promAlert   `yaml:"alerting,omitempty"`
		ScrapeConfigs []promScrape `yaml:"scrape_configs"`
	}
	promGlobal struct {
		ScrapeInterval                string `yaml:"scrape_interval"`
		EvaluationInterval            string `yaml:"evaluation_interval"`
		ScrapeNativeHistograms        bool   `yaml:"scrape_native_histograms"`
		AlwaysScrapeClassicHistograms bool   `yaml:"always_scrape_classic_histograms"`
	}
	promAlert struct {
		Alertmanagers []promAM `yaml:"alertmanagers"`
	}
	promAM struct {
		StaticConfigs []promStatic `yaml:"static_configs"`
	}
	promScrape struct {
		JobName        string       `yaml:"job_name"`
		ScrapeInterval string       `yaml:"scrape_interval,omitempty"`
		StaticConfigs  []promStatic `yaml:"static_configs"`
	}
	promStatic struct {
		Targets []string          `yaml:"targets"`
		Labels  map[string]string `yaml:"labels,omitempty"`
	}
)

// YAML renders the configuration.
func (c PrometheusConfig) YAML() ([]byte, error) {
	si, ei := c.ScrapeInterval, c.EvaluationInterval
	if si == 0 {
		si = 5 * time.Second
	}
	if ei == 0 {
		ei = 5 * time.Second
	}
	f := promFile{
		Global: promGlobal{
			ScrapeInterval:                promDuration(si),
			EvaluationInterval:            promDuration(ei),
			ScrapeNativeHistograms:        true,
			AlwaysScrapeClassicHistograms: true,
		},
		RuleFiles: c.RuleFiles,
	}
	if len(c.Alertmanagers) > 0 {
		f.Alerting = &promAlert{Alertmanagers: []promAM{{StaticConfigs: []promStatic{{Targets: c.Alertmanagers}}}}}
	}
	for _, j := range c.Jobs {
		if j.Name == "" || len(j.Groups) == 0 {
			return nil, fmt.Errorf("scrape job %q: needs a name and targets", j.Name)
		}
		s := promScrape{JobName: j.Name}
		for _, g := range j.Groups {
			if len(g.Targets) == 0 {
				return nil, fmt.Errorf("scrape job %q: a target group without targets", j.Name)
			}
			s.StaticConfigs = append(s.StaticConfigs, promStatic(g))
		}
		if j.Interval > 0 {
			s.ScrapeInterval = promDuration(j.Interval)
		}
		f.ScrapeConfigs = append(f.ScrapeConfigs, s)
	}
	var buf bytes.Buffer
	buf.WriteString("# Written by `envelope stack`: the compose stack's Prometheus config on loopback.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// promDuration formats d as a Prometheus duration (whole milliseconds).
func promDuration(d time.Duration) string {
	switch {
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	default:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
}

// AlertmanagerConfig is the Alertmanager configuration of the stack: the
// routing of deploy/alertmanager/alertmanager.yml (group per run and
// endpoint, critical inhibits warning), with no notification integration:
// alerts show in the Alertmanager UI.
const AlertmanagerConfig = `# Written by envelope stack: the compose stack's Alertmanager routing.
route:
  receiver: envelope
  group_by: [alertname, testid, name]
  group_wait: 10s
  group_interval: 1m
  repeat_interval: 4h
receivers:
  - name: envelope
inhibit_rules:
  - source_matchers: ['severity="critical"']
    target_matchers: ['severity="warning"']
    equal: [alertname, testid]
`
