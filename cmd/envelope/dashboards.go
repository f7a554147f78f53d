package main

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/dashboards"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// dashboardsCommand adds `envelope dashboards`.
func (c *cli) dashboardsCommand(app *kingpin.Application) {
	cmd := app.Command("dashboards", "Write the Grafana dashboards (Overview, Endpoints, Runs, ECS, Exporter health over Prometheus; Run history over a PostgreSQL run history) as JSON. Envelope bands come from the exporter's envelope gauges; --envelope adds fixed thresholds: red where its alert rules fire, a neutral marker at its band edges.")
	envPath := cmd.Flag("envelope", "Envelope file (YAML or JSON) whose alert thresholds and band edges become fixed thresholds, and the band of the Run history dashboard.").String()
	out := cmd.Flag("out", "Folder to write the dashboard JSON files into.").Default("dashboards").String()
	cmd.Action(c.Action(func() error {
		var opts dashboards.Options
		if *envPath != "" {
			env, err := envelope.ReadFile(*envPath)
			if err != nil {
				return err
			}
			opts.Envelope = env
		}
		paths, err := dashboards.WriteDir(*out, opts)
		if err != nil {
			return err
		}
		for _, p := range paths {
			c.Println(p)
		}
		return nil
	}))
}

// demoDashboards writes the dashboards; they carry the demo envelope's
// alert thresholds and band edges as fixed thresholds when the baseline
// step wrote it.
func demoDashboards(_ context.Context, d *demoEnv) error {
	var opts dashboards.Options
	what := "envelope bands from the exporter's gauges"
	if env, err := envelope.ReadFile(filepath.Join(d.Dir, "envelope.yaml")); err == nil {
		opts.Envelope = env
		what += ", thresholds from envelope.yaml"
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Join(d.Dir, "dashboards")
	paths, err := dashboards.WriteDir(dir, opts)
	if err != nil {
		return err
	}
	d.Printf("dashboards: %d Grafana dashboards in %s (%s)\n", len(paths), dir, what)
	return nil
}
