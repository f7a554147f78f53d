//go:build nocloudwatch

package main

import (
	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// noCloudWatch is true: this build (-tags nocloudwatch, the sidecar
// image's binary) links no AWS SDK, so it has no CloudWatch collector.
const noCloudWatch = true

// cloudwatchFlags adds nothing: leftOut explains a --cloudwatch.* flag.
func (c *cli) cloudwatchFlags(*kingpin.CmdClause) func() (prometheus.Collector, error) {
	return nil
}
