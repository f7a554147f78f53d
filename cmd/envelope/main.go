// Command envelope is the offline command line of load-test performance
// envelopes: it summarizes k6 results, derives baseline envelopes and
// their reports, compares later runs against them (exit codes for CI),
// keeps a history of runs by commit, and generates the rules and
// dashboards that judge live traffic. The scrape target is the separate
// exporter command.
//
// newApp builds the whole command line in one place; each command lives
// in its own file as a function that adds it to the app.
package main

import (
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
	app, c := cmdline.New("envelope",
		"Load-test performance envelopes, offline: summarize k6 results, derive baselines and reports, compare runs, keep a run history, generate rules and dashboards. The scrape target is the exporter command.", stdout, stderr)
	cli := &cli{c}
	for _, add := range cli.commands() {
		add(app)
	}
	return app
}

// runCLI runs one invocation on a fresh app (tests run many).
func runCLI(args []string, stdout, stderr io.Writer) int {
	return cmdline.Run(newApp(stdout, stderr), args, stderr)
}

func main() { cmdline.Main(runCLI) }
