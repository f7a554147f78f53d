package exporter

// Config and its defaults.

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// Config configures a Server.
//
// Limits follow one convention, the command line's: 0 means no limit
// (SeriesTTL: never expire), a negative limit is an error. The zero
// Config therefore bounds nothing; DefaultConfig holds the bounds
// `exporter serve` starts from, and its flags default to them. Sizes
// that cannot be unbounded (OTLPMaxBody, MaxHeaderBytes, ShutdownGrace,
// TelemetryPath) take their default when zero.
type Config struct {
	Envelope *envelope.Envelope // envelope gauges and band bucket edges; nil for none
	// Envelopes are further envelopes served beside Envelope, each with
	// its gauges under its own envelope label; every trend's classic
	// buckets hold the band edges of all of them. Names must differ.
	Envelopes   []*envelope.Envelope
	AllowTags   []string // k6 tags exposed as labels beyond catalogue.DefaultK6Labels
	SeriesLimit int      // k6 label sets held; 0 = no limit
	MetricLimit int      // distinct k6 metrics; 0 = no limit
	// MaxLabelValue bounds a label value in bytes (longer: the sample is
	// refused); 0 = no limit.
	MaxLabelValue int
	// LabelBytesLimit bounds the label bytes of all series held together
	// (each series' label values plus one byte per label); a new series
	// past it is refused. 0 = no limit.
	LabelBytesLimit int64
	// SeriesTTL removes a run's series (every label set sharing its
	// testid) this long after its last point; 0 = never. Run and Serve
	// apply it.
	SeriesTTL time.Duration
	// NativeMaxBuckets bounds the native buckets of one histogram series
	// and NativeBucketBudget those of all series; past either a series'
	// resolution is halved. 0 = no limit.
	NativeMaxBuckets   int
	NativeBucketBudget int64
	Logger             *slog.Logger // nil = discard

	TelemetryPath          string // default /metrics
	DisableExporterMetrics bool   // drop go_* and process_* series
	MaxRequests            int    // parallel scrapes; 0 = no limit
	// MaxHeaderBytes bounds one HTTP request's headers; 0 =
	// defaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxConnections bounds the open connections of each listener Run
	// opens (HTTP and gRPC); 0 = no limit.
	MaxConnections int
	// ShutdownGrace is how long Run lets requests in flight finish once
	// its context ends; 0 = defaultShutdownGrace.
	ShutdownGrace time.Duration

	OTLPMaxBody      int64  // bytes; 0 = otlp.DefaultMaxBody
	OTLPMetricPrefix string // k6's K6_OTEL_METRIC_PREFIX; "" accepts both "k6_" and none
	// OTLPMemoryBudget bounds the OTLP requests decoded at once to
	// budget/(2 × max-body) (at least one): a request being decoded holds
	// its decompressed body and its decoded form, each up to the body
	// limit. It also bounds the OTLP body bytes being received at once,
	// with otlp.RequestCost counted per request, to budget; others wait briefly, then get 503
	// (gRPC UNAVAILABLE) with Retry-After. Scrapes charge what they hold
	// (their page, the family being encoded) to the same account, and get
	// 503 with Retry-After when it has no room for them within 0.5 s.
	// 0 = no limit.
	OTLPMemoryBudget int64
	// OTLPStreamLimit bounds the cumulative OTLP streams remembered; 0 =
	// no limit (otlp.StreamBucketBudget still bounds their buckets).
	OTLPStreamLimit int

	ListenAddresses []string // for Run; default ":19466"
	OTLPGRPCAddress string   // for Run: OTLP/gRPC listen address (e.g. ":4317"); "" = off
	WebConfigFile   string   // exporter-toolkit web config (TLS, basic auth)

	Collectors []prometheus.Collector // more collectors to serve (ECS, CloudWatch)

	// FollowPoll is how often a followed file is checked once at its end;
	// 0 = follow.DefaultPoll.
	FollowPoll time.Duration
}

// setDefaults checks cfg and fills in the defaults of its zero fields.
func (cfg *Config) setDefaults() error {
	if cfg.TelemetryPath == "" {
		cfg.TelemetryPath = "/metrics"
	}
	if !strings.HasPrefix(cfg.TelemetryPath, "/") {
		return fmt.Errorf("telemetry path %q: must start with /", cfg.TelemetryPath)
	}
	if cfg.TelemetryPath == "/v1/metrics" || cfg.TelemetryPath == "/-/healthy" || cfg.TelemetryPath == "/-/ready" {
		return fmt.Errorf("telemetry path %q: reserved", cfg.TelemetryPath)
	}
	for _, l := range []struct {
		name string
		v    int64
	}{
		{"series limit", int64(cfg.SeriesLimit)}, {"metric limit", int64(cfg.MetricLimit)},
		{"max label value", int64(cfg.MaxLabelValue)}, {"label bytes limit", cfg.LabelBytesLimit}, {"series TTL", int64(cfg.SeriesTTL)},
		{"native max buckets", int64(cfg.NativeMaxBuckets)}, {"native bucket budget", cfg.NativeBucketBudget},
		{"OTLP memory budget", cfg.OTLPMemoryBudget}, {"OTLP stream limit", int64(cfg.OTLPStreamLimit)},
		{"max connections", int64(cfg.MaxConnections)}, {"max requests", int64(cfg.MaxRequests)},
	} {
		if l.v < 0 {
			return fmt.Errorf("%s %d: negative (0 means no limit)", l.name, l.v)
		}
	}
	if cfg.OTLPMaxBody <= 0 {
		cfg.OTLPMaxBody = otlp.DefaultMaxBody
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = defaultMaxHeaderBytes
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = defaultShutdownGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, t := range cfg.AllowTags {
		if !validLabel(t) {
			return fmt.Errorf("allowed tag %q: not a valid Prometheus label name", t)
		}
	}
	return nil
}

func validLabel(s string) bool {
	if s == "" || strings.HasPrefix(s, "__") {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// DefaultConfig is the configuration `exporter serve` starts from: every
// bound at its default. Its flags default to these values, and mean by
// 0 what Config does: no limit.
func DefaultConfig() Config {
	return Config{
		SeriesLimit:        defaultSeriesLimit,
		MetricLimit:        defaultMetricLimit,
		MaxLabelValue:      defaultMaxLabelValue,
		LabelBytesLimit:    defaultLabelBytesLimit,
		SeriesTTL:          defaultSeriesTTL,
		NativeMaxBuckets:   defaultNativeMaxBuckets,
		NativeBucketBudget: defaultNativeBucketBudget,
		TelemetryPath:      "/metrics",
		MaxRequests:        defaultMaxRequests,
		MaxHeaderBytes:     defaultMaxHeaderBytes,
		MaxConnections:     defaultMaxConnections,
		ShutdownGrace:      defaultShutdownGrace,
		OTLPMaxBody:        otlp.DefaultMaxBody,
		OTLPMemoryBudget:   defaultOTLPMemoryBudget,
		OTLPStreamLimit:    otlp.DefaultStreamLimit,
	}
}

// Defaults of the bounds on what input can grow (see Config).
const (
	defaultMaxRequests   = 40    // parallel scrapes
	defaultSeriesLimit   = 10000 // k6 label sets
	defaultMetricLimit   = 1000  // distinct k6 metric names
	defaultMaxLabelValue = 1024  // bytes of one label value
	// defaultLabelBytesLimit holds ~400 bytes of labels for each of
	// defaultSeriesLimit series, three times what k6's default tags take
	// with URL names; the text page repeats them on every bucket line,
	// so this also bounds its size (about 20 lines a histogram series).
	defaultLabelBytesLimit  = 4 << 20
	defaultSeriesTTL        = 15 * time.Minute // a run's series live this long after its last point
	defaultOTLPMemoryBudget = 64 << 20         // bytes of OTLP requests decoded at once
)
