package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/ecs"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// `exporter ecs record` samples the task metadata endpoint during the
// baseline runs; `exporter ecs operating-point` adds the ECS figures the
// samples give to an envelope file.
func (c *cli) ecsCommand(app *kingpin.Application) {
	cmd := app.Command("ecs", "ECS operating point: record task metadata snapshots during baseline runs and add CPU/memory bands to an envelope.")

	rec := cmd.Command("record", "Append /task and /task/stats snapshots (NDJSON) from the task metadata endpoint until interrupted.")
	recFlags := ecs.AddFlags(rec)
	out := rec.Flag("out", "Snapshot file to append to.").Required().String()
	interval := rec.Flag("interval", "Time between snapshots (Fargate refreshes stats every 10s).").Default("10s").Duration()
	count := rec.Flag("count", "Stop after this many snapshots; 0 = until interrupted.").Default("0").Int()
	rec.Action(c.action(func() error {
		if recFlags.MetadataURI == "" {
			return withCode(2, fmt.Errorf("no task metadata endpoint: set --ecs.metadata-uri or $%s", ecs.EnvMetadataURI))
		}
		client, err := ecs.NewClient(recFlags.MetadataURI, recFlags.Timeout)
		if err != nil {
			return withCode(2, err)
		}
		f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return withCode(2, err)
		}
		ctx, stop := c.signalContext()
		defer stop()
		log := c.logger()
		n, err := ecs.Record(ctx, client, f, *interval, *count, func(err error) { log.Warn("snapshot skipped", "err", err) })
		// A failed close can lose appended snapshots.
		if cerr := f.Close(); cerr != nil && err == nil {
			err = withCode(2, cerr)
		}
		c.printf("%d snapshots appended to %s\n", n, *out)
		return err
	}))

	op := cmd.Command("operating-point", "Compute the ECS operating point (CPU and memory utilisation bands, task size, CPU seconds per request) from snapshots covering the envelope's runs and write it into the envelope.")
	envFile := op.Flag("envelope", "Envelope file whose runs (provenance.sources start/end, runs[].requests) the snapshots cover.").Required().String()
	snaps := op.Flag("snapshots", "Snapshot files written by `exporter ecs record`; repeatable (one per task).").Required().Strings()
	opOut := op.Flag("out", "Where to write the updated envelope (default: overwrite --envelope).").String()
	op.Action(c.action(func() error {
		env, err := envelope.ReadFile(*envFile)
		if err != nil {
			return withCode(2, err)
		}
		runs, err := ecs.RunsFromEnvelope(env)
		if err != nil {
			return withCode(2, fmt.Errorf("%s: %w", *envFile, err))
		}
		var all []ecs.Snapshot
		for _, p := range *snaps {
			f, err := os.Open(p)
			if err != nil {
				return withCode(2, err)
			}
			s, err := ecs.ReadSnapshots(f, p)
			_ = f.Close() // read only: closing loses nothing
			if err != nil {
				return withCode(2, err)
			}
			all = append(all, s...)
		}
		point, err := ecs.OperatingPoint(all, runs)
		if err != nil {
			return withCode(2, err)
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
			return withCode(2, err)
		}
		c.printf("ECS operating point: %d CPU units / %d MiB x %d task(s); CPU %.1f%%-%.1f%% of the limit, memory peak %.1f%%-%.1f%%, %.4g-%.4g CPU s/request; written to %s\n",
			point.TaskCPUUnits, point.TaskMemoryMiB, point.Tasks,
			point.CPUUtilisation.Min*100, point.CPUUtilisation.Max*100,
			point.MemoryUtilisation.Min*100, point.MemoryUtilisation.Max*100,
			point.CPUSecondsPerRequest.Min, point.CPUSecondsPerRequest.Max, dst)
		return nil
	}))
}
