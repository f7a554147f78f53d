package main

import (
	"fmt"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/ecs"
)

// `exporter ecs record` samples the task metadata endpoint during the
// baseline runs; `envelope ecs operating-point` adds the ECS figures the
// samples give to an envelope file.
func (c *cli) ecsCommand(app *kingpin.Application) {
	cmd := app.Command("ecs", "ECS task metadata: record snapshots during baseline runs (`envelope ecs operating-point` turns them into CPU/memory bands of an envelope).")

	rec := cmd.Command("record", "Append /task and /task/stats snapshots (NDJSON) from the task metadata endpoint until interrupted.")
	recFlags := ecs.AddFlags(rec)
	out := rec.Flag("out", "Snapshot file to append to.").Required().String()
	interval := rec.Flag("interval", "Time between snapshots (Fargate refreshes stats every 10s).").Default("10s").Duration()
	count := rec.Flag("count", "Stop after this many snapshots; 0 = until interrupted.").Default("0").Int()
	rec.Action(c.Action(func() error {
		if recFlags.MetadataURI == "" {
			return fmt.Errorf("no task metadata endpoint: set --ecs.metadata-uri or $%s", ecs.EnvMetadataURI)
		}
		client, err := ecs.NewClient(recFlags.MetadataURI, recFlags.Timeout)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		ctx, stop := c.SignalContext()
		defer stop()
		log := c.Logger()
		n, err := ecs.Record(ctx, client, f, *interval, *count, func(err error) { log.Warn("snapshot skipped", "err", err) })
		// A failed close can lose appended snapshots.
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
		c.Printf("%d snapshots appended to %s\n", n, *out)
		return err
	}))
}
