//go:build nocloudwatch

package main

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// A build with -tags nocloudwatch (the image's sidecar binary) links no
// AWS SDK, so it has no CloudWatch collector: the SDK's package inits and
// pages alone put the binary past the sidecar's memory targets
// (docs/benchmarks.md).

// cloudwatchFlags adds nothing: cloudWatchLeftOut explains a
// --cloudwatch.* flag.
func (c *cli) cloudwatchFlags(*kingpin.CmdClause) func() (prometheus.Collector, error) {
	return nil
}

// cloudWatchLeftOut is the error for args that give a --cloudwatch.*
// flag, found before parsing so that the reason, not "unknown flag",
// is what the user reads.
func cloudWatchLeftOut(args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--cloudwatch.") {
			flag, _, _ := strings.Cut(a, "=")
			return fmt.Errorf("%s: this binary has no CloudWatch collector (built with -tags nocloudwatch, as the sidecar image is, so that it links no AWS SDK); use the build without that tag: `go install github.com/envelope-dev/envelope/cmd/exporter@latest`, or the image built with --build-arg TAGS=", flag)
		}
	}
	return nil
}
