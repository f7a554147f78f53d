// Command exporter is the scrape target of load-test performance
// envelopes: it serves k6 series (followed NDJSON, OTLP pushed by k6 over
// HTTP and gRPC, finished result files), envelope gauges, ECS task
// metrics and CloudWatch's on /metrics, pushes them over OTLP if asked,
// and records ECS task metadata snapshots. The offline work (baselines,
// reports, comparisons, rules, dashboards) is the envelope command's.
//
// newApp builds the whole command line in one place; each command lives
// in its own file as a function that adds it to the app.
package main

import (
	"fmt"
	"io"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/cmdline"
)

// cli is one invocation's state (cmdline.CLI); the commands are its
// methods.
type cli struct{ *cmdline.CLI }

// newApp builds the command line: every command and flag, writing to
// stdout and stderr.
func newApp(stdout, stderr io.Writer) *kingpin.Application {
	app, c := cmdline.New("exporter",
		"Load-test performance envelopes, live: serve k6 series, envelope gauges and ECS metrics to Prometheus and push them over OTLP. The offline tools are the envelope command.", stdout, stderr)
	cli := &cli{c}
	cli.serveCommand(app)
	cli.ecsCommand(app)
	return app
}

// runCLI runs one invocation on a fresh app (tests run many). A build
// without the CloudWatch collector says so for its flags before parsing,
// rather than calling them unknown.
func runCLI(args []string, stdout, stderr io.Writer) int {
	if err := cloudWatchLeftOut(args); err != nil {
		_, _ = fmt.Fprintf(stderr, "exporter: %v\n", err)
		return cmdline.CodeError
	}
	return cmdline.Run(newApp(stdout, stderr), args, stderr)
}

func main() { cmdline.Main(runCLI) }
