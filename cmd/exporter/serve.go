package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/otelpush"
)

// serveCommand adds `exporter serve`.
func (c *cli) serveCommand(app *kingpin.Application) {
	cmd := app.Command("serve", "Serve k6 series (followed NDJSON, OTLP pushed by k6, finished result files) and envelope gauges on /metrics.")
	webFlags := kingpinflag.AddFlags(cmd, ":"+exporter.DefaultPort)
	metricsPath := cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").String()
	disableExporterMetrics := cmd.Flag("web.disable-exporter-metrics", "Exclude go_* and process_* metrics.").Bool()
	// Every limit flag defaults to exporter.DefaultConfig and passes its
	// value through as is: 0 means no limit there as here.
	def := exporter.DefaultConfig()
	maxRequests := cmd.Flag("web.max-requests", "Maximum number of parallel scrape requests. 0 = no limit.").Default(fmt.Sprint(def.MaxRequests)).Int()
	maxHeader := cmd.Flag("web.max-header-bytes", "Largest request headers accepted (HTTP and gRPC); larger get 431.").Default(fmt.Sprint(def.MaxHeaderBytes)).Int()
	maxConns := cmd.Flag("web.max-connections", "Maximum open connections per listener (HTTP and gRPC); further ones wait to be accepted. 0 = no limit.").Default(fmt.Sprint(def.MaxConnections)).Int()
	memLimit := cmd.Flag("runtime.memory-limit-bytes", "Soft memory limit of the Go runtime: past it the garbage collector works harder (the series and OTLP budgets bound what is held live; this bounds the collector's headroom). GOMEMLIMIT, when set, wins. 0 = none.").Default(fmt.Sprint(exporter.DefaultMemoryLimit)).Int64()
	grace := cmd.Flag("web.shutdown-grace", "On SIGTERM or SIGINT, how long requests in flight may finish before they are cut (and counted in the log).").Default(def.ShutdownGrace.String()).Duration()
	envFiles := cmd.Flag("envelope", "Envelope file (YAML or JSON), or a folder of them (*.yaml, *.yml, *.json): exposes each envelope's bands as gauges under its envelope label and adds its band edges to the classic buckets; repeatable.").Strings()
	var followSet bool
	follow := cmd.Flag("k6.json", "k6 NDJSON output to follow as it grows (tail -F, through truncation and rotation); '-' reads stdin.").IsSetByUser(&followSet).String()
	results := cmd.Flag("k6.results", "Finished k6 result files (NDJSON, .gz, CSV) replayed at start; repeatable.").Strings()
	allow := cmd.Flag("k6.allow-tag", "k6 tag to expose as a label beyond testid, scenario, name, method, status, expected_response and group; repeatable (beware of unbounded tags such as url).").Strings()
	limit := cmd.Flag("k6.series-limit", "Maximum k6 label sets held; further new label sets are dropped and counted. 0 = no limit.").Default(fmt.Sprint(def.SeriesLimit)).Int()
	metricLimit := cmd.Flag("k6.metric-limit", "Maximum distinct k6 metrics held; samples of further metrics are dropped and counted. 0 = no limit.").Default(fmt.Sprint(def.MetricLimit)).Int()
	ttl := cmd.Flag("k6.series-ttl", "Remove a run's series (all label sets sharing its testid) this long after its last point; 0 = never.").Default(def.SeriesTTL.String()).Duration()
	maxLabel := cmd.Flag("k6.max-label-value-bytes", "Longest label value accepted; samples with longer ones are refused and counted. 0 = no limit.").Default(fmt.Sprint(def.MaxLabelValue)).Int()
	labelBytes := cmd.Flag("k6.label-bytes-limit", "Label bytes all k6 series hold together (their label values, plus one byte per label); further new label sets are dropped and counted. 0 = no limit.").Default(fmt.Sprint(def.LabelBytesLimit)).Int64()
	nativeMax := cmd.Flag("k6.native-max-buckets", "Native histogram buckets one series keeps before its resolution is halved. 0 = no limit.").Default(fmt.Sprint(def.NativeMaxBuckets)).Int()
	nativeBudget := cmd.Flag("k6.native-bucket-budget", "Native histogram buckets all series keep together before resolutions are halved. 0 = no limit.").Default(fmt.Sprint(def.NativeBucketBudget)).Int64()
	otlpBudget := cmd.Flag("otlp.memory-budget-bytes", "Memory for OTLP requests received and decoded at once: budget / (2 × max body) requests are decoded together (each holds its decompressed body and its decoded form), and bodies being received together with the scrape being rendered hold at most budget bytes, counting 64 KiB per request; others get 503 (gRPC UNAVAILABLE) with Retry-After, as does a scrape that finds no room within 0.5 s. 0 = no limit.").Default(fmt.Sprint(def.OTLPMemoryBudget)).Int64()
	otlpStreams := cmd.Flag("otlp.stream-limit", "Maximum cumulative OTLP streams remembered; points of further streams are dropped and counted. 0 = no limit (their buckets stay bounded).").Default(fmt.Sprint(def.OTLPStreamLimit)).Int()
	otlpMax := cmd.Flag("otlp.max-body-bytes", "Largest OTLP request body accepted on /v1/metrics (after gzip decoding).").Default(fmt.Sprint(def.OTLPMaxBody)).Int64()
	otlpGRPC := cmd.Flag("otlp.grpc-listen-address", "Also receive OTLP over gRPC (k6's default protocol) on this address, e.g. :4317; empty = off.").Default("").String()
	otlpPrefix := cmd.Flag("otlp.metric-prefix", "Prefix k6 puts on OTLP metric names (K6_OTEL_METRIC_PREFIX); empty strips k6_ when present.").Default("").String()
	pushEndpoint := cmd.Flag("otlp.push-endpoint", "OpenTelemetry collector OTLP/HTTP endpoint (host:port or URL) to push the k6 and envelope series to.").String()
	pushInterval := cmd.Flag("otlp.push-interval", "Interval of the OTLP push.").Default("15s").Duration()
	pushInsecure := cmd.Flag("otlp.push-insecure", "Push over plain HTTP.").Bool()
	collectors := c.serveCollectorFlags(cmd)

	cmd.Action(c.Action(func() error {
		// A signal from now on stops serve cleanly, even one that comes
		// while the inputs are read.
		ctx, stop := c.SignalContext()
		defer stop()
		// kingpin hands a lone "-" argument over as an empty value.
		if followSet && *follow == "" {
			*follow = "-"
		}
		// Know each result file's format before replaying it: a summary
		// file must fail with one clear error, not first with line noise.
		for _, f := range *results {
			if err := exporter.CheckReplayable(f); err != nil {
				return fmt.Errorf("--k6.results: %w", err)
			}
		}
		log := c.Logger()
		log.Info("Starting envelope exporter", "version", version.Info(), "memory_limit", exporter.SetMemoryLimit(*memLimit))
		log.Info("Build context", "build_context", version.BuildContext())
		cfg := exporter.Config{
			AllowTags:              *allow,
			SeriesLimit:            *limit,
			Logger:                 log,
			TelemetryPath:          *metricsPath,
			DisableExporterMetrics: *disableExporterMetrics,
			MaxRequests:            *maxRequests,
			OTLPMaxBody:            *otlpMax,
			OTLPMetricPrefix:       *otlpPrefix,
			ListenAddresses:        *webFlags.WebListenAddresses,
			OTLPGRPCAddress:        *otlpGRPC,
			WebConfigFile:          *webFlags.WebConfigFile,
		}
		cfg.MetricLimit, cfg.SeriesTTL, cfg.MaxLabelValue, cfg.LabelBytesLimit = *metricLimit, *ttl, *maxLabel, *labelBytes
		cfg.MaxHeaderBytes, cfg.MaxConnections, cfg.ShutdownGrace = *maxHeader, *maxConns, *grace
		cfg.NativeMaxBuckets, cfg.NativeBucketBudget = *nativeMax, *nativeBudget
		cfg.OTLPMemoryBudget, cfg.OTLPStreamLimit = *otlpBudget, *otlpStreams
		envs, err := readEnvelopes(*envFiles)
		if err != nil {
			return err
		}
		cfg.Envelopes = envs
		warnUnexportedMatch(log, envs, *allow)
		for _, mk := range collectors {
			col, err := mk()
			if err != nil {
				return err
			}
			if col != nil {
				cfg.Collectors = append(cfg.Collectors, col)
			}
		}
		srv, err := exporter.New(cfg)
		if err != nil {
			return err
		}
		in := exporter.Inputs{
			Results:  *results,
			Follow:   *follow,
			Replayed: func() { warnUnselected(log, envs, srv.K6Gatherer()) },
		}
		if *pushEndpoint != "" {
			opts := otelpush.Options{Endpoint: *pushEndpoint, Interval: *pushInterval, Insecure: *pushInsecure, Logger: log, OnError: srv.PushFailed}
			in.Push = func(ctx context.Context) error { return otelpush.Run(ctx, srv.K6Gatherer(), opts) }
		}
		return srv.RunWith(ctx, in)
	}))
}

// readEnvelopes reads every envelope the --envelope flags name: files, or
// folders whose *.yaml, *.yml and *.json files are all envelopes.
func readEnvelopes(paths []string) ([]*envelope.Envelope, error) {
	var out []*envelope.Envelope
	from := map[string]string{}
	for _, p := range paths {
		files := []string{p}
		if fi, err := os.Stat(p); err != nil {
			return nil, err
		} else if fi.IsDir() {
			files = nil
			for _, pat := range []string{"*.yaml", "*.yml", "*.json"} {
				m, _ := filepath.Glob(filepath.Join(p, pat))
				files = append(files, m...)
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("--envelope %s: folder holds no envelope file (*.yaml, *.yml, *.json)", p)
			}
		}
		for _, f := range files {
			env, err := envelope.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if prev, ok := from[env.Name]; ok {
				return nil, fmt.Errorf("%s: envelope name %q is already used by %s; names must differ", f, env.Name, prev)
			}
			from[env.Name] = f
			out = append(out, env)
		}
	}
	return out, nil
}
