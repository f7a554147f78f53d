//go:build !serveonly

package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"
)

// serveOnly is false: this build has every command.
const serveOnly = false

// commands are every command, in the order help lists them. A build
// with -tags serveonly (the container image's binary) has only those of
// commands_serveonly.go.
func (c *cli) commands() []func(*kingpin.Application) {
	return []func(*kingpin.Application){
		c.serveCommand,
		c.backtestCommand,
		c.baselineCommand,
		c.compareCommand,
		c.dashboardsCommand,
		c.demoCommand,
		c.ecsCommand,
		c.historyCommand,
		c.reportCommand,
		c.rulesCommand,
		c.simulateCommand,
		c.stackCommand,
		c.summarizeCommand,
	}
}

// print and println write to stdout like printf; only commands of this
// build use them.
func (c *cli) print(a ...any)   { _, _ = fmt.Fprint(c.stdout, a...) }
func (c *cli) println(a ...any) { _, _ = fmt.Fprintln(c.stdout, a...) }
