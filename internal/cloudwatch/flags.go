package cloudwatch

import (
	"context"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// AddFlags registers --cloudwatch.* on cmd and returns the Config they
// fill. Polling is off unless a cluster and a service are given.
func AddFlags(cmd *kingpin.CmdClause) *Config {
	c := &Config{}
	cmd.Flag("cloudwatch.region", "AWS region of the ECS cluster (default: the SDK's chain, e.g. $AWS_REGION).").StringVar(&c.Region)
	cmd.Flag("cloudwatch.cluster", "ECS cluster (name or ARN) whose service metrics are polled from CloudWatch; off unless set with --cloudwatch.service.").StringVar(&c.Cluster)
	cmd.Flag("cloudwatch.service", "ECS service to poll; repeatable.").StringsVar(&c.Services)
	cmd.Flag("cloudwatch.container-insights", "Also poll ECS/ContainerInsights (CpuUtilized, MemoryUtilized, task counts, network); needs Container Insights on the cluster, billed per metric.").
		Default("true").BoolVar(&c.ContainerInsights)
	cmd.Flag("cloudwatch.period", "CloudWatch statistic period (ECS metrics have 1-minute resolution).").Default(DefaultPeriod.String()).DurationVar(&c.Period)
	cmd.Flag("cloudwatch.delay", "Publication delay: the newest period requested ends this long before now, so its value is complete.").Default(DefaultDelay.String()).DurationVar(&c.Delay)
	cmd.Flag("cloudwatch.window", "How far back from the delayed end to look for each metric's newest datapoint.").Default(DefaultWindow.String()).DurationVar(&c.Window)
	cmd.Flag("cloudwatch.interval", "Time between background polls; scrapes serve the last values.").Default(DefaultInterval.String()).DurationVar(&c.Interval)
	cmd.Flag("cloudwatch.timestamps", "Expose values with CloudWatch's datapoint timestamps instead of the scrape time (query with offset; see docs/ecs.md).").BoolVar(&c.SetTimestamps)
	cmd.Flag("cloudwatch.endpoint", "CloudWatch base endpoint override, e.g. a VPC endpoint.").StringVar(&c.Endpoint)
	return c
}

// Start validates c and, when polling is configured, builds the client
// from the default credential chain, starts polling in the background
// until ctx ends and returns the collector. It returns nil, nil when
// polling is off.
func Start(ctx context.Context, c *Config, logger *slog.Logger) (prometheus.Collector, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if !c.Enabled() {
		return nil, nil
	}
	api, err := NewAPI(ctx, *c)
	if err != nil {
		return nil, err
	}
	p, err := NewPoller(*c, api, logger)
	if err != nil {
		return nil, err
	}
	go p.Run(ctx)
	logger.Info("CloudWatch ECS service polling on", "cluster", p.cluster, "services", c.Services,
		"period", p.cfg.Period, "delay", p.cfg.Delay, "interval", p.cfg.Interval)
	return NewCollector(p), nil
}
