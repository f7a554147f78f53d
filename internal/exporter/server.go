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
//	srv, err := exporter.New(exporter.Config{Envelope: env, Logger: logger})
//	n, err := srv.ReplayFile("run.ndjson.gz")   // finished results
//	go srv.Follow(ctx, "live.ndjson")            // tail -F, "-" for stdin
//	srv.IngestPoint(&k6.Point{...})             // one sample
//	http.Handle("/", srv.Handler())              // /metrics, /v1/metrics, /-/healthy, /-/ready, landing page
//	err = srv.Run(ctx)                           // listen on Config.ListenAddresses until ctx ends
//	err = srv.ServeGRPC(ctx, l)                  // OTLP/gRPC on a listener (Run does it for Config.OTLPGRPCAddress)
//	n := srv.DeleteRun("checkout-42")            // drop a run's series (DELETE /api/v1/runs/{testid})
//
// Everything an input can grow is bounded by Config (series, metrics,
// label value length, native buckets, OTLP streams and in-flight
// decoding) and every drop is counted; a run's series expire
// Config.SeriesTTL after its last point (Run and Serve apply it).
package exporter

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/follow"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// Input names used in self-metrics' source label.
const (
	SourceNDJSON  = "ndjson"  // followed live
	SourceResults = "results" // finished files replayed
	SourceOTLP    = "otlp"    // pushed by k6
	SourceAPI     = "api"     // IngestPoint
)

// Defaults of the bounds on what input can grow (see Config).
const (
	DefaultSeriesLimit      = 10000            // k6 label sets
	DefaultMetricLimit      = 1000             // distinct k6 metric names
	DefaultMaxLabelValue    = 1024             // bytes of one label value
	DefaultSeriesTTL        = 15 * time.Minute // a run's series live this long after its last point
	DefaultOTLPMemoryBudget = 64 << 20         // bytes of OTLP requests decoded at once
)

// HTTP server timeouts: a client that sends its headers or body slowly,
// or keeps an idle connection, cannot hold a descriptor for long.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second // whole request, body included
	WriteTimeout      = 60 * time.Second // a scrape of the largest store fits well within
	IdleTimeout       = 2 * time.Minute
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

// Server is the exporter.
type Server struct {
	cfg   Config
	log   *slog.Logger
	st    *store
	reg   *prometheus.Registry
	k6Reg *prometheus.Registry // k6 and envelope series only (OTLP push)
	otlp  *otlp.Receiver
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
	reopens  prometheus.Counter
	pushErrs prometheus.Counter
	otlpReqs *prometheus.CounterVec

	bufPool sync.Pool
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
		cfg:   cfg,
		log:   cfg.Logger,
		st:    newStore(cfg.AllowTags, limit, envs),
		reg:   prometheus.NewRegistry(),
		k6Reg: prometheus.NewRegistry(),
		rlog:  newRateLog(cfg.Logger, 10*time.Second),
	}
	s.st.metricLimit = max(cfg.MetricLimit, 0)
	s.st.maxLabel = max(cfg.MaxLabelValue, 0)
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

// registerSelfMetrics creates and registers the exporter's own series.
func (s *Server) registerSelfMetrics(limit int) {
	vec := func(d catalogue.Desc) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)
	}
	s.points = vec(catalogue.ExporterPointsIngested)
	s.bad = vec(catalogue.ExporterBadLines)
	s.otlpReqs = vec(catalogue.ExporterOTLPRequests)
	s.lag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: catalogue.ExporterIngestLag.Name, Help: catalogue.ExporterIngestLag.Help}, catalogue.ExporterIngestLag.Labels)
	s.lastTS = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: catalogue.ExporterLastPoint.Name, Help: catalogue.ExporterLastPoint.Help}, catalogue.ExporterLastPoint.Labels)
	s.overflow = vec(catalogue.ExporterSeriesOverflow)
	s.reopens = prometheus.NewCounter(prometheus.CounterOpts{Name: catalogue.ExporterFollowReopens.Name, Help: catalogue.ExporterFollowReopens.Help})
	s.pushErrs = prometheus.NewCounter(prometheus.CounterOpts{Name: catalogue.ExporterOTLPPushErrors.Name, Help: catalogue.ExporterOTLPPushErrors.Help})
	s.st.onOverflow = func(reason string) { s.overflow.WithLabelValues(reason).Inc() }
	for _, r := range []string{OverflowSeries, OverflowMetrics, OverflowStreams} {
		s.overflow.WithLabelValues(r)
	}
	for _, src := range []string{SourceNDJSON, SourceResults, SourceOTLP, SourceAPI} {
		s.points.WithLabelValues(src) // known in advance: export 0
	}
	for _, o := range otlp.Outcomes {
		s.otlpReqs.WithLabelValues(o)
	}
	seriesGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: catalogue.ExporterSeries.Name, Help: catalogue.ExporterSeries.Help},
		func() float64 { return float64(s.st.nseries.Load()) })
	limitGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: catalogue.ExporterSeriesLimit.Name, Help: catalogue.ExporterSeriesLimit.Help},
		func() float64 { return float64(limit) })

	s.reg.MustRegister(s.points, s.bad, s.otlpReqs, s.lag, s.lastTS, s.overflow, s.reopens, s.pushErrs, seriesGauge, limitGauge,
		versioncollector.NewCollector("envelope_exporter"))
}

// newOTLPReceiver builds the OTLP receiver within the memory budget.
func (s *Server) newOTLPReceiver() error {
	cfg := s.cfg
	inflight := 0
	if cfg.OTLPMemoryBudget > 0 {
		// A request being decoded holds its decompressed body and its
		// decoded form, each up to the body limit.
		inflight = int(max(cfg.OTLPMemoryBudget/(2*cfg.OTLPMaxBody), 1))
	}
	auth, err := grpcAuth(cfg.WebConfigFile)
	if err != nil {
		return err
	}
	s.otlp = otlp.NewReceiver((*otlpSink)(s), otlp.Options{
		MaxBody:     cfg.OTLPMaxBody,
		Prefix:      cfg.OTLPMetricPrefix,
		MaxInFlight: inflight,
		// Bodies being received are charged as their bytes arrive, within
		// the same budget: slow senders hold bytes, not decoding slots.
		MaxWireBytes: max(cfg.OTLPMemoryBudget, 0),
		StreamLimit:  cfg.OTLPStreamLimit,
		GRPCAuth:     auth,
		OnRequest: func(outcome string, points int, err error) {
			s.otlpReqs.WithLabelValues(outcome).Inc()
			if err != nil && outcome != otlp.OutcomeBusy {
				s.bad.WithLabelValues(SourceOTLP, outcome).Inc()
				s.rlog.warn(outcome, "rejected OTLP request", "reason", outcome, "err", err)
			}
		},
		OnBad: func(reason string, err error) { s.countBad(SourceOTLP, reason, err) },
		OnDrop: func(reason string) {
			s.overflow.WithLabelValues(reason).Inc()
		},
	})
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

// k6Collector renders the store; it is unchecked (describes nothing)
// because k6 metrics appear as the test runs.
type k6Collector struct{ st *store }

func (c *k6Collector) Describe(chan<- *prometheus.Desc) {}
func (c *k6Collector) Collect(ch chan<- prometheus.Metric) {
	c.st.collect(ch)
}

// countBad counts and (rate-limited) logs one refused or repaired input.
func (s *Server) countBad(src, reason string, err error) {
	s.bad.WithLabelValues(src, reason).Inc()
	s.rlog.warn(src+"_"+reason, "bad k6 input", "source", src, "reason", reason, "err", err)
}

// PushFailed counts a failed OTLP push (otelpush.Options.OnError).
func (s *Server) PushFailed(error) { s.pushErrs.Inc() }

// Registry holds the exporter's own, envelope and extra collectors' series;
// the k6 series are rendered beside it (see Gatherer).
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Collector exposes the k6 series as a prometheus.Collector, for other
// registries (the scrape path renders them directly, see Gatherer).
func (s *Server) Collector() prometheus.Collector { return &k6Collector{st: s.st} }

// Gatherer gathers everything /metrics serves: the registry plus the k6
// series, rendered straight from the store.
func (s *Server) Gatherer() prometheus.Gatherer { return merged{s.reg, s.st} }

// K6Gatherer gathers only the k6 and envelope series (what the OTLP push
// sends).
func (s *Server) K6Gatherer() prometheus.Gatherer { return merged{s.k6Reg, s.st} }

// merged adds the store's families to a registry's, sorted by name; a
// name the registry already has keeps the registry's family.
type merged struct {
	reg *prometheus.Registry
	st  *store
}

func (m merged) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := m.reg.Gather()
	have := make(map[string]bool, len(mfs))
	for _, mf := range mfs {
		have[mf.GetName()] = true
	}
	for _, mf := range m.st.gather() {
		if !have[mf.GetName()] {
			mfs = append(mfs, mf)
		}
	}
	sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
	return mfs, err
}

// SetReady sets what /-/ready answers; New starts ready, serve marks it
// not ready while replaying --k6.results.
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

// Handler serves the telemetry path, /v1/metrics (OTLP), /-/healthy,
// /-/ready and the landing page.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(s.Gatherer(), promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(s.log.Handler(), slog.LevelError),
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            s.reg,
		MaxRequestsInFlight: s.cfg.MaxRequests,
	})
	mux.Handle(s.cfg.TelemetryPath, promhttp.InstrumentMetricHandler(s.reg, metrics))
	mux.Handle("/v1/metrics", s.otlp)
	// The probe bodies are for people; the status code is the answer, so a
	// failed body write (the prober went away) is not worth a log line.
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "Healthy\n")
	})
	mux.HandleFunc("DELETE /api/v1/runs/{testid}", s.deleteRun)
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if e := s.grpcErr.Load(); e != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "OTLP gRPC receiver stopped: %v\n", *e)
			return
		}
		if !s.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "Loading results\n")
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "Ready\n")
	})
	if s.cfg.TelemetryPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "envelope exporter",
			Description: "k6 load-test series and performance envelopes for Prometheus",
			Version:     version.Info(),
			Links: []web.LandingLinks{
				{Address: s.cfg.TelemetryPath, Text: "Metrics"},
				{Address: "/-/healthy", Text: "Health"},
				{Address: "/-/ready", Text: "Readiness"},
			},
			ExtraHTML: "<p>k6 pushes OTLP/HTTP metrics to <code>/v1/metrics</code>.</p>",
		})
		if err == nil {
			mux.Handle("/", landing)
		}
	}
	return mux
}

// Run listens on Config.ListenAddresses (exporter-toolkit: TLS and basic
// auth from Config.WebConfigFile) until ctx ends, then shuts down
// gracefully, letting in-flight requests finish for up to 5 s.
func (s *Server) Run(ctx context.Context) error {
	addrs := s.cfg.ListenAddresses
	if len(addrs) == 0 {
		addrs = []string{":19466"}
	}
	systemd := false
	flags := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &s.cfg.WebConfigFile}
	srv := s.httpServer()
	if s.cfg.OTLPGRPCAddress != "" {
		// Built first: a web config the gRPC receiver cannot honour
		// stops the start.
		tc, err := grpcTLS(s.cfg.WebConfigFile)
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp", s.cfg.OTLPGRPCAddress)
		if err != nil {
			return fmt.Errorf("OTLP gRPC listener: %w", err)
		}
		gctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// serveGRPC logs an early stop and turns /-/ready to 503.
		go func() { _ = s.serveGRPC(gctx, l, tc) }()
	}
	return s.serve(ctx, srv, func() error { return web.ListenAndServe(srv, flags, s.log) })
}

func (s *Server) httpServer() *http.Server {
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
		WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout}
}

// ServeGRPC serves OTLP/gRPC metrics on l until ctx ends, then stops
// gracefully. It applies the web config's TLS and basic auth. An error
// that stops it early is logged and makes /-/ready fail.
func (s *Server) ServeGRPC(ctx context.Context, l net.Listener) error {
	tc, err := grpcTLS(s.cfg.WebConfigFile)
	if err != nil {
		_ = l.Close() // never served; the config error is the one to report
		return err
	}
	return s.serveGRPC(ctx, l, tc)
}

func (s *Server) serveGRPC(ctx context.Context, l net.Listener, tc *tls.Config) error {
	gs := s.otlp.GRPCServer(tc)
	gs.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	s.log.Info("OTLP gRPC receiver listening", "address", l.Addr().String(), "tls", tc != nil)
	stopped := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = gs.Shutdown(sctx) // past the grace period connections are cut
	})
	defer stopped()
	var err error
	if tc != nil {
		err = gs.ServeTLS(l, "", "")
	} else {
		err = gs.Serve(l)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	if ctx.Err() == nil {
		s.log.Error("OTLP gRPC receiver stopped", "err", err)
		s.grpcErr.Store(&err)
	}
	return err
}

// Serve is Run on an existing listener (tests, `exporter stack`).
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	systemd := false
	addrs := []string{l.Addr().String()}
	flags := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &s.cfg.WebConfigFile}
	srv := s.httpServer()
	return s.serve(ctx, srv, func() error { return web.Serve(l, srv, flags, s.log) })
}

func (s *Server) serve(ctx context.Context, srv *http.Server, start func() error) error {
	if s.cfg.SeriesTTL > 0 {
		go s.expireLoop(ctx)
	}
	errc := make(chan error, 1)
	go func() { errc <- start() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// IngestPoint ingests one k6 sample. Unknown metrics (no Metric line yet,
// not a k6 built-in) are counted as bad input and skipped.
func (s *Server) IngestPoint(p *k6.Point) {
	bp := s.bufPool.Get().(*[]byte)
	var ok bool
	*bp, ok = s.ingestPoint(SourceAPI, p, *bp)
	s.bufPool.Put(bp)
	if ok {
		s.points.WithLabelValues(SourceAPI).Inc()
	}
}

// DefineMetric registers a k6 metric's type as an NDJSON Metric line does.
// A refused definition (invalid name, metric limit) is counted.
func (s *Server) DefineMetric(def *k6.MetricDef) {
	s.defineMetric(SourceAPI, def)
}

func (s *Server) defineMetric(src string, def *k6.MetricDef) {
	if _, err := s.st.define(def.Name, def.Type, def.Contains); err != nil && !errors.Is(err, otlp.ErrDropped) {
		s.countBad(src, badReason(err), err)
	}
}

// ingestPoint applies one sample; false when it was refused (counted
// where refused: bad_lines_total, or series_overflow_total for a limit).
func (s *Server) ingestPoint(src string, p *k6.Point, buf []byte) ([]byte, bool) {
	if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
		// One NaN would turn a histogram's sum into NaN for good.
		s.countBad(src, "bad_value", fmt.Errorf("metric %q: value %v", p.Metric, p.Value))
		return buf, false
	}
	f, ser, buf, fixed, err := s.st.seriesFor(p.Metric, buf, p.Tags, src == SourceResults)
	if fixed {
		s.countBad(src, "invalid_utf8", fmt.Errorf("metric %q: tag values not valid UTF-8, replaced", p.Metric))
	}
	if err != nil {
		if !errors.Is(err, otlp.ErrDropped) {
			s.countBad(src, badReason(err), fmt.Errorf("metric %q: %w", strings.ToValidUTF8(p.Metric, "\uFFFD"), err))
		}
		return buf, false
	}
	if f.typ == k6.Counter && p.Value < 0 {
		// A Prometheus counter never goes down; a negative increment
		// would read as a counter reset.
		s.countBad(src, "bad_value", fmt.Errorf("metric %q: negative counter sample %v", p.Metric, p.Value))
		return buf, false
	}
	if err := s.st.sample(f, ser, p.Value); err != nil {
		s.countBad(src, badReason(err), fmt.Errorf("metric %q: value %v: %w", p.Metric, p.Value, err))
		return buf, false
	}
	return buf, true
}

// lineIngester feeds NDJSON lines of one input through a k6.PointReader,
// counting bad lines and batching the self-metrics.
type lineIngester struct {
	s       *Server
	src     string
	live    bool
	buf     []byte
	r       k6.PointReader
	n       float64 // points not yet added to the self-metric
	total   int
	newest  time.Time
	pointsC prometheus.Counter
}

func (s *Server) newLineIngester(src, name string, live bool) *lineIngester {
	li := &lineIngester{s: s, src: src, live: live, buf: make([]byte, 0, 256), pointsC: s.points.WithLabelValues(src)}
	li.r = k6.PointReader{
		Name: name,
		// A line longer than the read buffer: k6 never writes one.
		MaxLine: 64 << 10,
		OnPoint: li.point,
		OnMetric: func(def *k6.MetricDef) error {
			s.defineMetric(src, def)
			return nil
		},
		OnBad: li.bad,
	}
	return li
}

// line takes one line of live input; bad lines are counted, never fatal.
func (li *lineIngester) line(line []byte) { _ = li.r.Feed(line) }

func (li *lineIngester) bad(e *k6.LineError) error {
	reason := "malformed"
	switch {
	case errors.Is(e, k6.ErrLineTooLong):
		reason = "line_too_long"
	case errors.Is(e, k6.ErrNotImplemented):
		reason = "parser_unavailable"
	}
	li.s.countBad(li.src, reason, fmt.Errorf("%s: line %d: %w", e.File, e.Line, e.Err))
	return nil
}

func (li *lineIngester) point(p *k6.Point) error {
	var ok bool
	li.buf, ok = li.s.ingestPoint(li.src, p, li.buf)
	li.total++
	if !ok {
		return nil
	}
	li.n++
	if p.Time.After(li.newest) {
		li.newest = p.Time
	}
	if li.n >= 4096 {
		li.flush()
	}
	return nil
}

// flush publishes batched self-metrics.
func (li *lineIngester) flush() {
	if li.n > 0 {
		li.pointsC.Add(li.n)
		li.n = 0
	}
	if !li.newest.IsZero() {
		li.s.lastTS.WithLabelValues(li.src).Set(float64(li.newest.UnixNano()) / 1e9)
		if li.live {
			li.s.lag.WithLabelValues(li.src).Set(max(time.Since(li.newest).Seconds(), 0))
		}
	}
}

// ReplayFile ingests a finished k6 result file: NDJSON (plain or .gz,
// streamed line by line in constant memory) or CSV (loaded whole by
// internal/k6), told apart by content. Bad lines are counted and skipped.
// It returns the number of samples ingested; a file that yields none (a
// summary JSON, an empty file, something that is not k6 output) is an
// error, so a wrong path is not mistaken for a replayed run.
func (s *Server) ReplayFile(path string) (int, error) {
	in, err := k6.OpenInput(path)
	if err != nil {
		return 0, err
	}
	defer in.Close() //nolint:errcheck // only read
	var n int
	if head, _ := in.Peek(len("metric_name,")); string(head) == "metric_name," {
		n, err = s.replayCSV(in)
	} else {
		n, err = s.ingestLines(in, SourceResults, false)
	}
	if err != nil {
		return n, err
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no k6 samples: want k6 --out json (NDJSON, plain or .gz) or --out csv output; summary files hold no samples to replay", path)
	}
	return n, nil
}

// replayCSV ingests a CSV result, which internal/k6 loads whole.
func (s *Server) replayCSV(in *k6.Input) (int, error) {
	run, err := k6.LoadReader(in.Name, in, k6.LoadOptions{KeepPoints: true, Lenient: true})
	if err != nil {
		return 0, err
	}
	// CSV carries no Metric lines: custom metrics take the type the
	// loader gave them (a trend unless a built-in), as summarize shows.
	for name, m := range run.Metrics {
		if m.Parent != name {
			continue
		}
		if _, err := s.st.lookup(name); err != nil {
			s.defineMetric(SourceResults, &k6.MetricDef{Name: name, Type: m.Type, Contains: m.Contains})
		}
	}
	buf := make([]byte, 0, 256)
	kept := 0
	for i := range run.Points {
		var ok bool
		if buf, ok = s.ingestPoint(SourceResults, &run.Points[i], buf); ok {
			kept++
		}
	}
	s.points.WithLabelValues(SourceResults).Add(float64(kept))
	return len(run.Points), nil
}

// ReplayReader ingests NDJSON from r, as ReplayFile does.
func (s *Server) ReplayReader(name string, r io.Reader) (int, error) {
	in, err := k6.NewInput(name, r)
	if err != nil {
		return 0, err
	}
	defer in.Close() //nolint:errcheck // only read
	return s.ingestLines(in, SourceResults, false)
}

func (s *Server) ingestLines(in *k6.Input, src string, live bool) (int, error) {
	li := s.newLineIngester(src, in.Name, live)
	err := li.r.Read(in)
	li.flush()
	return li.total, err
}

// Follow tails a growing k6 NDJSON file as `tail -F` does, through
// truncation and rotation, waiting for it while it does not exist; "-"
// reads stdin. It returns when ctx ends (nil) or stdin closes.
func (s *Server) Follow(ctx context.Context, path string) error {
	li := s.newLineIngester(SourceNDJSON, path, true)
	flushT := time.NewTicker(time.Second)
	defer flushT.Stop()
	var mu sync.Mutex
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-flushT.C:
				mu.Lock()
				li.flush()
				mu.Unlock()
			case <-done:
				return
			}
		}
	}()
	opts := follow.Options{
		Poll: s.cfg.FollowPoll,
		OnReopen: func(reason string) {
			s.reopens.Inc()
			s.log.Info("reopened followed file", "file", path, "reason", reason)
		},
		OnWait: func() { s.log.Info("waiting for file to appear", "file", path) },
	}
	err := follow.Lines(ctx, path, opts, func(line []byte) {
		mu.Lock()
		li.line(line)
		mu.Unlock()
	})
	mu.Lock()
	li.flush()
	mu.Unlock()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
