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

// Config configures a Server. The zero value serves k6 series with the
// default labels and no envelope.
type Config struct {
	Envelope *envelope.Envelope // envelope gauges and band bucket edges; nil for none
	// Envelopes are further envelopes served beside Envelope, each with
	// its gauges under its own envelope label; every trend's classic
	// buckets hold the band edges of all of them. Names must differ.
	Envelopes   []*envelope.Envelope
	AllowTags   []string // k6 tags exposed as labels beyond catalogue.DefaultK6Labels
	SeriesLimit int      // 0 = DefaultSeriesLimit; negative = no limit
	MetricLimit int      // distinct k6 metrics; 0 = DefaultMetricLimit; negative = no limit
	// MaxLabelValue bounds a label value in bytes (longer: the sample is
	// refused); 0 = DefaultMaxLabelValue; negative = no limit.
	MaxLabelValue int
	// SeriesTTL removes a run's series (every label set sharing its
	// testid) this long after its last point; 0 = DefaultSeriesTTL;
	// negative = never. Run and Serve apply it.
	SeriesTTL time.Duration
	// NativeMaxBuckets bounds the native buckets of one histogram series
	// and NativeBucketBudget those of all series; past either a series'
	// resolution is halved. 0 = the defaults; negative = no limit.
	NativeMaxBuckets   int
	NativeBucketBudget int64
	Logger             *slog.Logger // nil = discard

	TelemetryPath          string // default /metrics
	DisableExporterMetrics bool   // drop go_* and process_* series
	MaxRequests            int    // parallel scrapes; 0 = no limit
	// MaxHeaderBytes bounds one HTTP request's headers; 0 =
	// DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxConnections bounds the open connections of each listener Run
	// opens (HTTP and gRPC); 0 = DefaultMaxConnections; negative = no
	// limit.
	MaxConnections int
	// ShutdownGrace is how long Run lets requests in flight finish once
	// its context ends; 0 = DefaultShutdownGrace.
	ShutdownGrace time.Duration

	OTLPMaxBody      int64  // bytes; 0 = otlp.DefaultMaxBody
	OTLPMetricPrefix string // k6's K6_OTEL_METRIC_PREFIX; "" accepts both "k6_" and none
	// OTLPMemoryBudget bounds the OTLP requests decoded at once to
	// budget/(2 × max-body) (at least one): a request being decoded holds
	// its decompressed body and its decoded form, each up to the body
	// limit. It also bounds the OTLP body bytes being received at once,
	// with otlp.RequestCost counted per request, to budget; others wait briefly, then get 503
	// (gRPC UNAVAILABLE) with Retry-After. 0 = DefaultOTLPMemoryBudget;
	// negative = no limit.
	OTLPMemoryBudget int64
	OTLPStreamLimit  int // cumulative OTLP streams remembered; 0 = otlp.DefaultStreamLimit

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
	if cfg.SeriesLimit == 0 {
		cfg.SeriesLimit = DefaultSeriesLimit
	}
	if cfg.MetricLimit == 0 {
		cfg.MetricLimit = DefaultMetricLimit
	}
	if cfg.MaxLabelValue == 0 {
		cfg.MaxLabelValue = DefaultMaxLabelValue
	}
	if cfg.SeriesTTL == 0 {
		cfg.SeriesTTL = DefaultSeriesTTL
	}
	if cfg.NativeMaxBuckets == 0 {
		cfg.NativeMaxBuckets = DefaultNativeMaxBuckets
	}
	if cfg.NativeBucketBudget == 0 {
		cfg.NativeBucketBudget = DefaultNativeBucketBudget
	}
	if cfg.OTLPMaxBody <= 0 {
		cfg.OTLPMaxBody = otlp.DefaultMaxBody
	}
	if cfg.OTLPMemoryBudget == 0 {
		cfg.OTLPMemoryBudget = DefaultOTLPMemoryBudget
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
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

// Defaults of the bounds on what input can grow (see Config).
const (
	DefaultSeriesLimit      = 10000            // k6 label sets
	DefaultMetricLimit      = 1000             // distinct k6 metric names
	DefaultMaxLabelValue    = 1024             // bytes of one label value
	DefaultSeriesTTL        = 15 * time.Minute // a run's series live this long after its last point
	DefaultOTLPMemoryBudget = 64 << 20         // bytes of OTLP requests decoded at once
)
