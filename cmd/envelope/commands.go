package main

import "github.com/alecthomas/kingpin/v2"

// commands are every command, in the order help lists them.
func (c *cli) commands() []func(*kingpin.Application) {
	return []func(*kingpin.Application){
		c.backtestCommand,
		c.baselineCommand,
		c.checkRulesCommand,
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
