package main

import (
	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"

	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/k6"
)

// modeFlags say how a command that reads point streams computes their
// trend statistics: holding every sample, or in bounded memory.
type modeFlags struct {
	mode   *string
	budget *units.Base2Bytes
}

func addModeFlags(cmd *kingpin.CmdClause) modeFlags {
	return modeFlags{
		mode:   cmd.Flag("mode", cmdline.Choices("exact holds every trend sample (k6's own numbers); sketch keeps bounded memory, whatever the run's length, with at most 0.5% relative error per quantile.", "exact", "sketch")).Default("exact").Enum("exact", "sketch"),
		budget: cmd.Flag("memory-budget", "Switch from exact to sketch mode when trend samples would hold more than this (e.g. 512MB); 0 = no limit.").Default("0").Bytes(),
	}
}

// apply sets the mode on a run file's load options.
func (m modeFlags) apply(o k6.LoadOptions) k6.LoadOptions {
	o.Mode, o.MemoryBudget = k6.Mode(*m.mode), int64(*m.budget)
	return o
}
