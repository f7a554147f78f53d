//go:build serveonly

package main

import "github.com/alecthomas/kingpin/v2"

// serveOnly is true: the build leaves out fullOnlyCommands.
const serveOnly = true

// commands are the serve-only build's: what a sidecar runs (serve, the
// ECS snapshots, summarize), without the charts, the rule engine and the
// generators the other commands link. The others stay known, hidden,
// each failing with where to find it.
func (c *cli) commands() []func(*kingpin.Application) {
	adds := []func(*kingpin.Application){c.serveCommand, c.ecsCommand, c.summarizeCommand}
	for _, name := range fullOnlyCommands {
		adds = append(adds, notInThisBuildCommand(name))
	}
	return adds
}

// notInThisBuildCommand adds a hidden command that fails with where the
// full command line is, so a user of the serve-only binary learns why
// the command they read about is missing.
func notInThisBuildCommand(name string) func(*kingpin.Application) {
	return func(app *kingpin.Application) {
		app.Command(name, "Not in this serve-only build.").Hidden().
			Action(func(*kingpin.ParseContext) error { return notInThisBuild(name) })
	}
}
