package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/ecs"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// `envelope ecs operating-point` adds the ECS figures that the snapshots
// `exporter ecs record` took during the baseline runs give to an
// envelope file.
func (c *cli) ecsCommand(app *kingpin.Application) {
	cmd := app.Command("ecs", "ECS operating point: add CPU/memory bands from task metadata snapshots (`exporter ecs record`) to an envelope.")

	op := cmd.Command("operating-point", "Compute the ECS operating point (CPU and memory utilisation bands, task size, CPU seconds per request) from snapshots covering the envelope's runs and write it into the envelope.")
	envFile := op.Flag("envelope", "Envelope file whose runs (provenance.sources start/end, runs[].requests) the snapshots cover.").Required().String()
	snaps := op.Flag("snapshots", "Snapshot files written by `exporter ecs record`; repeatable (one per task).").Required().Strings()
	opOut := op.Flag("out", "Where to write the updated envelope (default: overwrite --envelope).").String()
	op.Action(c.Action(func() error {
		env, err := envelope.ReadFile(*envFile)
		if err != nil {
			return err
		}
		runs, err := ecs.RunsFromEnvelope(env)
		if err != nil {
			return fmt.Errorf("%s: %w", *envFile, err)
		}
		var all []ecs.Snapshot
		for _, p := range *snaps {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			s, err := ecs.ReadSnapshots(f, p)
			_ = f.Close() // read only: closing loses nothing
			if err != nil {
				return err
			}
			all = append(all, s...)
		}
		point, err := ecs.OperatingPoint(all, runs)
		if err != nil {
			return err
		}
		env.ECS = point
		dst := *opOut
		if dst == "" {
			dst = *envFile
		}
		format := envelope.YAML
		if strings.HasSuffix(dst, ".json") {
			format = envelope.JSON
		}
		if err := envelope.WriteFile(dst, env, format); err != nil {
			return err
		}
		c.Printf("ECS operating point: %d CPU units / %d MiB x %d task(s); CPU %.1f%%-%.1f%% of the limit, memory peak %.1f%%-%.1f%%, %.4g-%.4g CPU s/request; written to %s\n",
			point.TaskCPUUnits, point.TaskMemoryMiB, point.Tasks,
			point.CPUUtilisation.Min*100, point.CPUUtilisation.Max*100,
			point.MemoryUtilisation.Min*100, point.MemoryUtilisation.Max*100,
			point.CPUSecondsPerRequest.Min, point.CPUSecondsPerRequest.Max, dst)
		return nil
	}))
}
