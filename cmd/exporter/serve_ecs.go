package main

import (
	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/envelope-dev/envelope/internal/ecs"
)

// serveCollectorFlags adds the ECS task metadata (--ecs.*) and, in builds
// that have it, CloudWatch (--cloudwatch.*) flags to `exporter serve` and
// returns the makers of the collectors they configure. Both are off
// unless configured; inside an ECS task ECS_CONTAINER_METADATA_URI_V4
// turns the first on.
func (c *cli) serveCollectorFlags(cmd *kingpin.CmdClause) []func() (prometheus.Collector, error) {
	ecsFlags := ecs.AddFlags(cmd)
	makers := []func() (prometheus.Collector, error){
		func() (prometheus.Collector, error) { return ecsFlags.Collector(c.Logger()) },
	}
	if mk := c.cloudwatchFlags(cmd); mk != nil {
		makers = append(makers, mk)
	}
	return makers
}
