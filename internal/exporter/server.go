// Package exporter serves k6 results and envelope figures as Prometheus
// series: the `exporter serve` component.
//
// A Server holds every k6 series in memory (counters, gauges, k6 Rate
// metrics as counters by condition, and Trend metrics as histograms with
// both native buckets at schema 7 and classic buckets whose bounds include
// the envelope's band edges) and renders them at scrape time, so
// scrapes never wait on ingestion and ingestion never waits on scrapes.
// Nothing is precomputed: no percentiles, averages or rates, so every
// series sums correctly across k6 instances and exporters.
//
// Inputs, in any combination: k6 NDJSON lines (Follow a growing file or
// stdin, or ReplayFile a finished one), OTLP/HTTP metrics pushed by k6's
// OpenTelemetry output on /v1/metrics (internal/otlp), and points handed
// over in Go (IngestPoint). The API for tests and other commands:
//
//	cfg := exporter.DefaultConfig()             // the bounds exporter serve starts from
//	cfg.Envelope, cfg.Logger = env, logger
//	srv, err := exporter.New(cfg)
//	n, err := srv.ReplayFile("run.ndjson.gz")   // finished results
//	go srv.Follow(ctx, "live.ndjson")            // tail -F, "-" for stdin
//	srv.IngestPoint(&k6.Point{...})             // one sample
//	http.Handle("/", srv.Handler())              // /metrics, /v1/metrics, /-/healthy, /-/ready, landing page
//	err = srv.Run(ctx)                           // listen on Config.ListenAddresses until ctx ends
//	err = srv.ServeGRPC(ctx, l)                  // OTLP/gRPC on a listener (Run does it for Config.OTLPGRPCAddress)
//	n := srv.DeleteRun("checkout-42")            // drop a run's series (DELETE /api/v1/runs/{testid})
//
// Everything an input can grow is bounded by Config (series, metrics,
// label value length and label bytes, native buckets, OTLP streams, and
// one memory budget for OTLP bodies in flight and the scrape being
// rendered) and every drop is counted; a run's series expire
// Config.SeriesTTL after its last point (Run and Serve apply it).
package exporter

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/envelope-dev/envelope/internal/otlp"
)

// Input names used in self-metrics' source label.
const (
	SourceNDJSON  = "ndjson"  // followed live
	SourceResults = "results" // finished files replayed
	SourceOTLP    = "otlp"    // pushed by k6
	SourceAPI     = "api"     // IngestPoint
)

// Server is the exporter.
type Server struct {
	cfg   Config
	log   *slog.Logger
	st    *store
	reg   *prometheus.Registry
	k6Reg *prometheus.Registry // k6 and envelope series only (OTLP push)
	otlp  *otlp.Receiver
	// mem is the memory account OTLP bodies being received and scrapes
	// being rendered share (Config.OTLPMemoryBudget).
	mem   *otlp.Memory
	web   *webConfig // --web.config.file for gRPC; nil without one
	rlog  *rateLog
	ready atomic.Bool
	// grpcErr holds why the gRPC receiver stopped serving: /-/ready
	// fails while it is set.
	grpcErr atomic.Pointer[error]

	points   *prometheus.CounterVec
	bad      *prometheus.CounterVec
	lag      *prometheus.GaugeVec
	lastTS   *prometheus.GaugeVec
	overflow *prometheus.CounterVec
	refused  *refusedMetrics // definitions the metric limit refused
	reopens  prometheus.Counter
	pushErrs prometheus.Counter
	starts   prometheus.Counter // OTLP stream identities with a new start time
	otlpReqs *prometheus.CounterVec

	bufPool sync.Pool
	// httpBusy counts the requests the HTTP server is handling.
	httpBusy atomic.Pointer[inFlight]
}

// New builds a Server: registries, collectors and the OTLP receiver.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	envs, err := cfg.envelopes()
	if err != nil {
		return nil, err
	}
	limit := max(cfg.SeriesLimit, 0)
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		st:      newStore(cfg.AllowTags, limit, envs),
		reg:     prometheus.NewRegistry(),
		k6Reg:   prometheus.NewRegistry(),
		rlog:    newRateLog(cfg.Logger, 10*time.Second),
		refused: newRefusedMetrics(),
	}
	s.st.metricLimit = max(cfg.MetricLimit, 0)
	s.st.maxLabel = max(cfg.MaxLabelValue, 0)
	s.st.labelLimit = max(cfg.LabelBytesLimit, 0)
	s.st.native.max = max(cfg.NativeMaxBuckets, 0)
	s.st.native.budget = max(cfg.NativeBucketBudget, 0)
	s.bufPool.New = func() any { b := make([]byte, 0, 256); return &b }
	s.registerSelfMetrics(limit)
	if len(envs) > 0 {
		ec := newEnvelopeCollector(envs)
		s.reg.MustRegister(ec)
		s.k6Reg.MustRegister(ec)
	}
	if !cfg.DisableExporterMetrics {
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, c := range cfg.Collectors {
		if err := s.reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering collector: %w", err)
		}
	}
	if err := s.newOTLPReceiver(); err != nil {
		return nil, err
	}
	s.ready.Store(true)
	return s, nil
}

// newOTLPReceiver builds the OTLP receiver within the memory budget.
func (s *Server) newOTLPReceiver() error {
	cfg := s.cfg
	s.mem = otlp.NewMemory(max(cfg.OTLPMemoryBudget, 0))
	inflight := 0
	if cfg.OTLPMemoryBudget > 0 {
		// A request being decoded holds its decompressed body and its
		// decoded form, each up to the body limit.
		inflight = int(max(cfg.OTLPMemoryBudget/(2*cfg.OTLPMaxBody), 1))
	}
	var auth func(string) bool
	if cfg.WebConfigFile != "" {
		wc, err := newWebConfig(cfg.WebConfigFile)
		if err != nil {
			return err
		}
		s.web, auth = wc, wc.checkAuth
	}
	s.otlp = otlp.NewReceiver(&sink{s: s, src: SourceOTLP}, otlp.Options{
		MaxBody:     cfg.OTLPMaxBody,
		Prefix:      cfg.OTLPMetricPrefix,
		MaxInFlight: inflight,
		// Bodies being received are charged as their bytes arrive, within
		// the same budget: slow senders hold bytes, not decoding slots.
		// Scrapes charge the same account.
		MaxWireBytes: max(cfg.OTLPMemoryBudget, 0),
		Memory:       s.mem,
		StreamLimit:  cfg.OTLPStreamLimit,
		GRPCAuth:     auth,
		OnRequest: func(outcome string, points int, err error) {
			s.otlpReqs.WithLabelValues(outcome).Inc()
			if err != nil && outcome != otlp.OutcomeBusy {
				s.refuse(SourceOTLP, otlp.Refuse(outcome, fmt.Errorf("rejected OTLP request: %w", err)), 1)
			}
		},
		OnNewStart:        s.starts.Inc,
		OnExplicitBuckets: s.explicitBuckets,
	})
	return nil
}

// explicitBuckets says, once per OTLP histogram stream, that its
// explicit buckets make coarse quantiles, and how k6 sends fine ones.
func (s *Server) explicitBuckets(e otlp.ExplicitBuckets) {
	widest := fmt.Sprintf("%g–%g", e.WidestLow, e.WidestHigh)
	if e.Unit != "" {
		widest += " " + e.Unit
	}
	s.log.Warn("OTLP histogram with explicit buckets: quantiles from it are coarse, only as fine as its buckets; set "+otlp.ExponentialSetting+" in k6's environment for exponential buckets",
		"metric", e.Metric, "stream", e.Tags, "bounds", e.Bounds, "widest_bucket", widest)
}
