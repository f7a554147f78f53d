package ecs

import (
	"log/slog"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Flags are the task metadata collector's command-line settings.
type Flags struct {
	Enabled     bool
	MetadataURI string
	Timeout     time.Duration
}

// AddFlags registers --ecs.* on cmd. The endpoint defaults to
// ECS_CONTAINER_METADATA_URI_V4, so inside an ECS task the collector is on
// without configuration and outside one it is off.
func AddFlags(cmd *kingpin.CmdClause) *Flags {
	f := &Flags{}
	cmd.Flag("ecs.enabled", "Read the ECS task metadata endpoint when one is set; --no-ecs.enabled turns the collector off (e.g. for a central exporter that runs on ECS itself).").
		Default("true").BoolVar(&f.Enabled)
	cmd.Flag("ecs.metadata-uri", "ECS task metadata endpoint v4 base URL; the collector is on when set (default: $"+EnvMetadataURI+").").
		Envar(EnvMetadataURI).StringVar(&f.MetadataURI)
	cmd.Flag("ecs.timeout", "Timeout of each task metadata request made at scrape time.").
		Default("5s").DurationVar(&f.Timeout)
	return f
}

// Collector returns the configured collector, or nil when no endpoint is
// set.
func (f *Flags) Collector(logger *slog.Logger) (prometheus.Collector, error) {
	if !f.Enabled || f.MetadataURI == "" {
		return nil, nil
	}
	c, err := NewClient(f.MetadataURI, f.Timeout)
	if err != nil {
		return nil, err
	}
	logger.Info("ECS task metadata collector on", "endpoint", c.Endpoint())
	return NewCollector(c, logger), nil
}
