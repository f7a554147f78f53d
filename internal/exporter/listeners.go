package exporter

// Listeners: HTTP (exporter-toolkit) and OTLP/gRPC, and their shutdown.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
)

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
		tc, err := s.grpcTLS()
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
	tc, err := s.grpcTLS()
	if err != nil {
		_ = l.Close() // never served; the config error is the one to report
		return err
	}
	return s.serveGRPC(ctx, l, tc)
}

// grpcTLS is the gRPC receiver's TLS: each connection takes the web
// config's current settings (nil without TLS at start).
func (s *Server) grpcTLS() (*tls.Config, error) {
	if s.web == nil {
		return nil, nil
	}
	return s.web.rotatingTLS()
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

// HTTP server timeouts: a client that sends its headers or body slowly,
// or keeps an idle connection, cannot hold a descriptor for long.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second // whole request, body included
	WriteTimeout      = 60 * time.Second // a scrape of the largest store fits well within
	IdleTimeout       = 2 * time.Minute
)
