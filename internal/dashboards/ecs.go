package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"

	c "github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/rules"
)

// ecs: the service under test on ECS. Task-level series carry only the
// scrape target's labels, so the task is the instance.
func ecs(b *board, o Options) {
	ecsTasks(b, o)
	ecsService(b, o)
	ecsSaturation(b, o)
}

// ecsTaskCPU and ecsTaskMem are each task's use of its limits.
var ecsTaskCPU = fmt.Sprintf("sum by (instance) (rate(%s[$__rate_interval])) / on (instance) sum by (instance) (%s)",
	c.ECSContainerCPUUsage.Name, c.ECSTaskCPULimit.Name)
var ecsTaskMem = fmt.Sprintf("sum by (instance) (%s) / on (instance) sum by (instance) (%s)",
	c.ECSContainerMemoryWorkingSet.Name, c.ECSTaskMemoryLimit.Name)

// ecsTasks: the task metadata endpoint's series.
func ecsTasks(b *board, o Options) {
	b.row("Tasks (task metadata endpoint)")
	cpu := b.timeseries(12, 8, panelSpec{
		Title:   "Task CPU utilisation of the limit",
		Desc:    "CPU seconds per second used by all containers of each task over the task's vCPU limit (on Fargate a hard cap: at 100% the task is throttled). Empty until the exporter runs as an ECS sidecar.",
		Unit:    units.PercentUnit,
		Targets: []target{{Expr: ecsTaskCPU, Legend: "{{instance}}"}},
	})
	mem := b.timeseries(12, 8, panelSpec{
		Title:   "Task memory utilisation of the limit",
		Desc:    "Working set (usage minus inactive page cache, what the OOM killer weighs) of all containers of each task over the task's memory limit.",
		Unit:    units.PercentUnit,
		Targets: []target{{Expr: ecsTaskMem, Legend: "{{instance}}"}},
	})
	// Red where the saturation alerts fire, the envelope's band top a
	// neutral line.
	var cpuMax, memMax float64
	if e := o.Envelope; e != nil && e.ECS != nil {
		cpuMax, memMax = e.ECS.CPUUtilisation.Max, e.ECS.MemoryUtilisation.Max
	}
	cpu.Thresholds(ceilingThresholds(rules.ECSSaturationRatio, cpuMax, seriesPanel)).ThresholdsStyle(lineThresholds())
	mem.Thresholds(ceilingThresholds(rules.ECSSaturationRatio, memMax, seriesPanel)).ThresholdsStyle(lineThresholds())
	b.timeseries(12, 8, panelSpec{
		Title: "Container CPU against its share",
		Desc:  "vCPUs used per container, with each container's configured CPU (a cpu.shares weight, not a cap) dashed.",
		Unit:  "vCPUs",
		Targets: []target{
			{Expr: fmt.Sprintf("sum by (instance, container_name) (rate(%s[$__rate_interval]))", c.ECSContainerCPUUsage.Name), Legend: "{{container_name}} used"},
			{Expr: fmt.Sprintf("sum by (instance, container_name) (%s)", c.ECSContainerCPULimit.Name), Legend: "{{container_name}} limit"},
		},
	}).OverrideByRegexp(".* limit$", dashedLine())
	b.timeseries(12, 8, panelSpec{
		Title: "Container memory against its limit",
		Desc:  "Working set per container, with the container's limit (container-level if set, else the task's) dashed.",
		Unit:  units.BytesIEC,
		Targets: []target{
			{Expr: fmt.Sprintf("sum by (instance, container_name) (%s)", c.ECSContainerMemoryWorkingSet.Name), Legend: "{{container_name}} working set"},
			{Expr: fmt.Sprintf("sum by (instance, container_name) (%s)", c.ECSContainerMemoryLimit.Name), Legend: "{{container_name}} limit"},
		},
	}).OverrideByRegexp(".* limit$", dashedLine())
}

// ecsService: CloudWatch's service series.
func ecsService(b *board, o Options) {
	b.row("Service (CloudWatch)")
	b.timeseries(8, 8, panelSpec{
		Title:   "Service CPU utilisation",
		Desc:    "AWS/ECS CPUUtilization of each service as a ratio of the task definition's CPU, by CloudWatch statistic (Average, Maximum) across tasks. CloudWatch publishes with a delay of a few minutes.",
		Unit:    units.PercentUnit,
		Targets: []target{{Expr: fmt.Sprintf("max by (service_name, statistic) (%s)", c.ECSServiceCPUUtilization.Name), Legend: "{{service_name}} {{statistic}}"}},
	})
	b.timeseries(8, 8, panelSpec{
		Title:   "Service memory utilisation",
		Desc:    "AWS/ECS MemoryUtilization of each service as a ratio of the task definition's memory, by CloudWatch statistic.",
		Unit:    units.PercentUnit,
		Targets: []target{{Expr: fmt.Sprintf("max by (service_name, statistic) (%s)", c.ECSServiceMemoryUtilization.Name), Legend: "{{service_name}} {{statistic}}"}},
	})
	b.timeseries(8, 8, panelSpec{
		Title: "Task counts",
		Desc:  "Running, desired and pending tasks per service (Container Insights). Running below desired during a test means tasks were replaced or scaling lagged.",
		Unit:  units.Short,
		Targets: []target{
			{Expr: fmt.Sprintf("max by (service_name) (%s)", c.ECSServiceRunningTasks.Name), Legend: "{{service_name}} running"},
			{Expr: fmt.Sprintf("max by (service_name) (%s)", c.ECSServiceDesiredTasks.Name), Legend: "{{service_name}} desired"},
			{Expr: fmt.Sprintf("max by (service_name) (%s)", c.ECSServicePendingTasks.Name), Legend: "{{service_name}} pending"},
		},
	}).OverrideByRegexp(".* desired$", dashedLine())
}

// ecsSaturation: task use beside the request rate.
func ecsSaturation(b *board, o Options) {
	b.row("Saturation")
	perReq := b.timeseries(8, 8, panelSpec{
		Title: "CPU seconds per request",
		Desc:  "CPU time the ECS tasks spent per k6 request: efficiency. A rise at the same throughput is a code or configuration regression even when latency holds.",
		Unit:  units.Seconds,
		Targets: []target{{Expr: fmt.Sprintf("sum (rate(%s[$__rate_interval])) / %s",
			c.ECSContainerCPUUsage.Name, rate(c.HTTPReqs, nil)), Legend: "CPU s / request"}},
	})
	if e := o.Envelope; e != nil {
		if limit, ok := rules.ECSCPUPerRequestLimit(e.ECS); ok {
			perReq.Thresholds(ceilingThresholds(limit, e.ECS.CPUSecondsPerRequest.Max, seriesPanel)).ThresholdsStyle(lineThresholds())
		}
	}
	b.timeseries(8, 8, panelSpec{
		Title: "Throughput against CPU",
		Desc:  "Request rate against the busiest task's CPU utilisation. Throughput flattening while CPU climbs towards 100% is saturation.",
		Unit:  units.RequestsPerSecond,
		Targets: []target{
			{Expr: rate(c.HTTPReqs, nil), Legend: "req/s"},
			{Expr: fmt.Sprintf("max (%s)", ecsTaskCPU), Legend: "busiest task CPU"},
		},
	}).OverrideByName("busiest task CPU", []dashboard.DynamicConfigValue{
		{Id: "unit", Value: units.PercentUnit},
		{Id: "custom.axisPlacement", Value: "right"},
	})
	b.timeseries(8, 8, panelSpec{
		Title: "Restarts and network drops",
		Desc:  "Container restarts and dropped or errored network packets per second: any non-zero value during a test invalidates its figures.",
		Unit:  "ops",
		Targets: []target{
			{Expr: fmt.Sprintf("sum by (container_name) (rate(%s[$__rate_interval]))", c.ECSContainerRestarts.Name), Legend: "{{container_name}} restarts"},
			{Expr: fmt.Sprintf("sum (rate(%s[$__rate_interval])) + sum (rate(%s[$__rate_interval]))",
				c.ECSNetworkReceiveDropped.Name, c.ECSNetworkTransmitDropped.Name), Legend: "packets dropped"},
			{Expr: fmt.Sprintf("sum (rate(%s[$__rate_interval])) + sum (rate(%s[$__rate_interval]))",
				c.ECSNetworkReceiveErrors.Name, c.ECSNetworkTransmitErrors.Name), Legend: "network errors"},
		},
	})
}

func dashedLine() []dashboard.DynamicConfigValue {
	return []dashboard.DynamicConfigValue{
		{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
		{Id: "custom.fillOpacity", Value: 0},
	}
}
