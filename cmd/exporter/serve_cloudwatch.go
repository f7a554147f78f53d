//go:build !nocloudwatch

package main

import (
	"context"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/envelope-dev/envelope/internal/cloudwatch"
)

// cloudwatchFlags adds the --cloudwatch.* flags and returns the maker of
// the collector they configure (nil when not configured).
func (c *cli) cloudwatchFlags(cmd *kingpin.CmdClause) func() (prometheus.Collector, error) {
	cfg := cloudwatch.AddFlags(cmd)
	// The poller lives as long as the process.
	return func() (prometheus.Collector, error) {
		return cloudwatch.Start(context.Background(), cfg, c.Logger())
	}
}

// cloudWatchLeftOut is nil: this build has the CloudWatch collector.
func cloudWatchLeftOut([]string) error { return nil }
