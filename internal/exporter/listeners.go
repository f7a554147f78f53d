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
	"sync/atomic"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/net/netutil"
)

// DefaultPort is the port Run listens on when Config names no address,
// and the one the commands offer: outside the 9100-9999 range most
// exporters take.
const DefaultPort = "19466"

// Run listens on Config.ListenAddresses (exporter-toolkit: TLS and basic
// auth from Config.WebConfigFile) until ctx ends, then shuts down
// gracefully, letting in-flight requests finish for up to
// Config.ShutdownGrace.
func (s *Server) Run(ctx context.Context) error {
	addrs := s.cfg.ListenAddresses
	if len(addrs) == 0 {
		addrs = []string{":" + DefaultPort}
	}
	systemd := false
	flags := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &s.cfg.WebConfigFile}
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
		done := make(chan struct{})
		// serveGRPC logs an early stop and turns /-/ready to 503.
		go func() { _ = s.serveGRPC(gctx, s.limit(l), tc); close(done) }()
		// Both servers stop together; Run returns once both have.
		defer func() { cancel(); <-done }()
	}
	ls, err := s.listen(addrs)
	if err != nil {
		return err
	}
	srv, busy := s.httpServer()
	return s.serve(ctx, srv, busy, func() error { return web.ServeMultiple(ls, srv, flags, s.log) })
}

func (s *Server) httpServer() (*http.Server, *inFlight) {
	busy := &inFlight{}
	s.httpBusy.Store(busy)
	return &http.Server{Handler: busy.wrap(s.Handler()), ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
		WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: s.cfg.MaxHeaderBytes}, busy
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
	busy := &inFlight{}
	gs.Handler = busy.wrap(gs.Handler)
	gs.MaxHeaderBytes = s.cfg.MaxHeaderBytes
	gs.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	s.log.Info("OTLP gRPC receiver listening", "address", l.Addr().String(), "tls", tc != nil)
	shut := make(chan struct{})
	stopped := context.AfterFunc(ctx, func() {
		defer close(shut)
		_ = s.shutdown(gs, "grpc", busy) // logs what it cut
	})
	defer func() {
		if !stopped() { // shutting down: wait until it is done
			<-shut
		}
	}()
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

// Serve is Run on an existing listener (tests, `envelope stack`).
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	systemd := false
	addrs := []string{l.Addr().String()}
	flags := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &s.cfg.WebConfigFile}
	srv, busy := s.httpServer()
	return s.serve(ctx, srv, busy, func() error { return web.Serve(l, srv, flags, s.log) })
}

func (s *Server) serve(ctx context.Context, srv *http.Server, busy *inFlight, start func() error) error {
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
	err := s.shutdown(srv, "http", busy)
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

// Defaults of the HTTP server's own bounds (see Config).
const (
	// defaultMaxHeaderBytes bounds one request's headers: a scrape or an
	// OTLP push sends well under 8 KiB, and a client that sends more
	// before any auth holds at most this much.
	defaultMaxHeaderBytes = 64 << 10
	// defaultMaxConnections bounds open connections per listener; further
	// ones wait in the kernel's accept queue.
	defaultMaxConnections = 512
	// defaultShutdownGrace is how long in-flight requests may finish
	// after SIGTERM or SIGINT.
	defaultShutdownGrace = 10 * time.Second
)

// listen opens one listener per address, each bounded to
// cfg.MaxConnections open connections.
func (s *Server) listen(addrs []string) ([]net.Listener, error) {
	var ls []net.Listener
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			for _, o := range ls {
				_ = o.Close() // never served
			}
			return nil, fmt.Errorf("listen on %s: %w", a, err)
		}
		ls = append(ls, s.limit(l))
	}
	return ls, nil
}

// limit bounds l to cfg.MaxConnections open connections (none when 0).
func (s *Server) limit(l net.Listener) net.Listener {
	if s.cfg.MaxConnections <= 0 {
		return l
	}
	return netutil.LimitListener(l, s.cfg.MaxConnections)
}

// inFlight counts the requests a server is handling, to say at shutdown
// how many were cut.
type inFlight struct{ n atomic.Int64 }

func (f *inFlight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.n.Add(1)
		defer f.n.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// shutdown stops srv gracefully: requests in flight may finish for
// cfg.ShutdownGrace, then those still running are cut and counted in the
// log. Stopping on a signal is a clean stop either way.
func (s *Server) shutdown(srv *http.Server, name string, busy *inFlight) error {
	s.log.Info("Shutting down", "server", name, "grace", s.cfg.ShutdownGrace, "requests_in_flight", busy.n.Load())
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		cut := busy.n.Load()
		_ = srv.Close() // cuts what the grace period did not finish
		s.log.Warn("Grace period over: requests still in flight were cut", "server", name, "cut", cut)
		return nil
	}
	return err
}
