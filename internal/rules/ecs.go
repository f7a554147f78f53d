package rules

import (
	"fmt"

	c6 "github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// ECS alert names.
const (
	AlertECSCPUSaturated      = "ECSTaskCPUSaturated"
	AlertECSMemoryNearLimit   = "ECSTaskMemoryNearLimit"
	AlertECSTasksBelowDesired = "ECSServiceTasksBelowDesired"
	AlertECSCPUPerRequestHigh = "ECSCPUPerRequestAboveEnvelope"
	AlertECSMetadataDown      = "ECSMetadataEndpointDown"
	AlertECSCloudWatchFailing = "ECSCloudWatchPollFailing"
	// ECSSaturationRatio is the share of a task's CPU or memory limit the
	// saturation alerts fire at.
	ECSSaturationRatio         = 0.9
	ecsCPUPerRequestTolerance  = 0.2 // rise over the envelope band's max
	ecsCPUPerRequestWindowSpec = "5m"
)

// buildECS contributes the ECS group when the envelope has ECS figures,
// i.e. when ECS series covered the baseline runs. The saturation alerts
// use fixed ratios of the limits (Fargate CPU is a hard cap: usage
// flattening near it is the only reliable throttling signal, since TMDS
// reports throttling_data as 0); the efficiency alert compares CPU
// seconds per request with the envelope's band.
func buildECS(env *envelope.Envelope, c *Calibration, o Options) ([]RuleGroup, error) {
	if env == nil || env.ECS == nil {
		return nil, nil
	}
	s, err := newScope(env, o)
	if err != nil {
		return nil, err
	}
	e := env.ECS
	cpu := c6.ECSContainerCPUUsage.Name
	// ECS series describe the service, not a k6 test: the envelope's
	// match selects only the request counter they are divided by.
	rec := RuleGroup{Name: s.group("ecs.rules"), Rules: []Rule{
		{Record: c6.RecECSTaskCPUUtilisation, Expr: fmt.Sprintf(
			"sum without (container_name) (rate(%s[1m])) / %s", cpu, c6.ECSTaskCPULimit.Name)},
		{Record: c6.RecECSTaskMemoryUtilisation, Expr: fmt.Sprintf(
			"sum without (container_name) (%s) / %s", c6.ECSContainerMemoryWorkingSet.Name, c6.ECSTaskMemoryLimit.Name)},
		{Record: c6.RecECSContainerMemoryUtilisation, Expr: fmt.Sprintf(
			"%s / %s", c6.ECSContainerMemoryWorkingSet.Name, c6.ECSContainerMemoryLimit.Name)},
		{Record: c6.RecECSCPUSecondsPerRequest, Expr: fmt.Sprintf(
			"sum (rate(%[1]s[%[3]s])) / sum (rate(%[2]s[%[3]s])) and sum (rate(%[2]s[%[3]s])) > 0",
			cpu, reqs+s.sel(), ecsCPUPerRequestWindowSpec)},
	}}
	for i := range rec.Rules {
		rec.Rules[i].Labels = map[string]string{EnvelopeLabel: s.name}
	}

	band := func(b envelope.Band) string {
		if b.N == 0 {
			return "not recorded"
		}
		return fmt.Sprintf("%s–%s", pct(b.Min), pct(b.Max))
	}
	size := ""
	if e.TaskCPUUnits > 0 || e.TaskMemoryMiB > 0 {
		size = fmt.Sprintf(" The baseline task size is %d CPU units / %d MiB.", e.TaskCPUUnits, e.TaskMemoryMiB)
	}
	ratio := fmtFloat(ECSSaturationRatio)
	alerts := []Rule{
		{
			Alert:  AlertECSCPUSaturated,
			Expr:   fmt.Sprintf("%s >= %s", s.rec(c6.RecECSTaskCPUUtilisation), ratio),
			For:    "5m",
			Labels: map[string]string{"severity": "warning"},
			Annotations: ann(o, AlertECSCPUSaturated, "An ECS task is using its whole CPU limit.",
				fmt.Sprintf("Task {{ $labels.instance }} has used {{ $value | humanizePercentage }} of its vCPU limit for 5m. The baseline ran at %s of the limit (below saturation).%s At the limit Fargate throttles the task and latency rises.",
					band(e.CPUUtilisation), size)),
		},
		{
			Alert: AlertECSMemoryNearLimit,
			Expr: fmt.Sprintf("%s >= %s or %s >= %s",
				s.rec(c6.RecECSTaskMemoryUtilisation), ratio, s.rec(c6.RecECSContainerMemoryUtilisation), ratio),
			For:    "5m",
			Labels: map[string]string{"severity": "warning"},
			Annotations: ann(o, AlertECSMemoryNearLimit, "An ECS task's working set is near its memory limit.",
				fmt.Sprintf("Task {{ $labels.instance }}{{ with $labels.container_name }} container {{ . }}{{ end }}: the working set is {{ $value | humanizePercentage }} of the memory limit. The baseline peaked at %s of the limit.%s Past the limit the container is OOM-killed.",
					band(e.MemoryUtilisation), size)),
		},
		{
			Alert:  AlertECSTasksBelowDesired,
			Expr:   fmt.Sprintf("%s < %s", c6.ECSServiceRunningTasks.Name, c6.ECSServiceDesiredTasks.Name),
			For:    "5m",
			Labels: map[string]string{"severity": "warning"},
			Annotations: ann(o, AlertECSTasksBelowDesired, "An ECS service runs fewer tasks than desired.",
				"Service {{ $labels.service_name }} in cluster {{ $labels.cluster_name }} has run {{ $value }} tasks, fewer than desired, for 5m (CloudWatch Container Insights, a few minutes late). Tasks are being replaced or cannot be placed; a load test now measures a smaller service than the baseline."),
		},
		{
			Alert:  AlertECSMetadataDown,
			Expr:   fmt.Sprintf("%s == 0", c6.ECSUp.Name),
			For:    "5m",
			Labels: map[string]string{"severity": "warning"},
			Annotations: ann(o, AlertECSMetadataDown, "The exporter cannot read the ECS task metadata endpoint.",
				"Exporter {{ $labels.instance }} has failed to read the ECS task metadata endpoint for 5m (ecs_up = {{ $value }}); its log names the reason. Task CPU and memory figures are missing."),
		},
		{
			Alert:  AlertECSCloudWatchFailing,
			Expr:   fmt.Sprintf("%s == 0", c6.CloudWatchUp.Name),
			For:    "15m",
			Labels: map[string]string{"severity": "info"},
			Annotations: ann(o, AlertECSCloudWatchFailing, "CloudWatch polls for ECS service metrics are failing.",
				"Exporter {{ $labels.instance }} has failed to poll CloudWatch for 15m (up = {{ $value }}); "+c6.CloudWatchErrors.Name+" says whether it is throttling, credentials or something else. Service figures are stale."),
		},
	}
	if limit, ok := ECSCPUPerRequestLimit(e); ok {
		b := e.CPUSecondsPerRequest
		alerts = append(alerts, Rule{
			Alert:  AlertECSCPUPerRequestHigh,
			Expr:   fmt.Sprintf("%s > %s", s.rec(c6.RecECSCPUSecondsPerRequest), fmtFloat(limit)),
			For:    "10m",
			Labels: map[string]string{"severity": "warning"},
			Annotations: ann(o, AlertECSCPUPerRequestHigh, "The service spends more CPU per request than in the envelope.",
				fmt.Sprintf("The ECS tasks used {{ $value | humanize }} CPU seconds per k6 request over %s for 10m. The baseline band is %s–%s s; the threshold is its max +%s. More CPU for the same work is an efficiency regression even while latency holds.",
					ecsCPUPerRequestWindowSpec, fmtFloat(round4(b.Min)), fmtFloat(round4(b.Max)), pct(ecsCPUPerRequestTolerance))),
		})
	}
	for i := range alerts {
		alerts[i].Labels = s.labels(alerts[i].Labels)
	}
	return []RuleGroup{rec, {Name: s.group("ecs.alerts"), Rules: alerts}}, nil
}

// ECSCPUPerRequestLimit is the CPU seconds per request the efficiency
// alert fires above: the top of the envelope's band raised by the
// tolerance; ok is false when the envelope has no such band.
func ECSCPUPerRequestLimit(e *envelope.ECS) (float64, bool) {
	if e == nil {
		return 0, false
	}
	b := e.CPUSecondsPerRequest
	if b.N == 0 || b.Max <= 0 {
		return 0, false
	}
	return round4(b.Max * (1 + ecsCPUPerRequestTolerance)), true
}
