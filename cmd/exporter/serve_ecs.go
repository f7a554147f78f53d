package main

import (
	"context"

	"github.com/envelope-dev/envelope/internal/cloudwatch"
	"github.com/envelope-dev/envelope/internal/ecs"
)

// ECS task metadata (--ecs.*) and CloudWatch (--cloudwatch.*) collectors
// for `exporter serve`. Both are off unless configured; inside an ECS
// task ECS_CONTAINER_METADATA_URI_V4 turns the first on.
func init() {
	ecsFlags := ecs.AddFlags(serveCmd)
	cwConfig := cloudwatch.AddFlags(serveCmd)
	serveCollectors = append(serveCollectors,
		func() (exporterCollector, error) { return ecsFlags.Collector(logger()) },
		// The poller lives as long as the process.
		func() (exporterCollector, error) { return cloudwatch.Start(context.Background(), cwConfig, logger()) },
	)
}
