package exporter

// The HTTP routes.

import (
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
)

// SetReady sets what /-/ready answers; New starts ready, serve marks it
// not ready while replaying --k6.results.
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

// Handler serves the telemetry path, /v1/metrics (OTLP), /-/healthy,
// /-/ready and the landing page.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	metrics := newScrapes(s.Gatherer(), s.log, s.cfg.MaxRequests)
	metrics.mem = s.mem
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
