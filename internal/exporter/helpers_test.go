package exporter

// Helpers the tests of this package share: serving on loopback,
// replaying a reader, the prometheus.Collector path over the store, the
// runs held, a gRPC client of the OTLP receiver.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/envelope-dev/envelope/internal/k6"
)

// replayReader ingests NDJSON from r, as ReplayFile does, without its
// check that samples came.
func (s *Server) replayReader(name string, r io.Reader) (int, error) {
	in, err := k6.NewInput(name, r)
	if err != nil {
		return 0, err
	}
	defer in.Close() //nolint:errcheck // only read
	return s.ingestLines(in, SourceResults, false)
}

// runCount is the number of runs held.
func (st *store) runCount() int {
	st.runMu.Lock()
	defer st.runMu.Unlock()
	return len(st.runs)
}

// collect emits every series as prometheus.Metrics: the Collector path,
// which a pedantic registry checks against the scrape path.
func (st *store) collect(ch chan<- prometheus.Metric) {
	for _, f := range st.sortedFamilies() {
		for _, s := range f.snapshot() {
			if f.typ == k6.Rate {
				ch <- &k6Metric{f: f, s: s, cond: 1}
				ch <- &k6Metric{f: f, s: s, cond: 0}
				continue
			}
			ch <- &k6Metric{f: f, s: s}
		}
	}
}

// k6Metric renders one series at scrape time.
type k6Metric struct {
	f    *family
	s    *series
	cond int
}

func (m *k6Metric) Desc() *prometheus.Desc { return m.f.desc }

func (m *k6Metric) Write(out *dto.Metric) error {
	m.f.write(m.s, m.cond, out)
	return nil
}

// listenLoopback opens a listener on a free loopback port; a failure
// fails the test.
func listenLoopback(tb testing.TB) net.Listener {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen on loopback: %v", err)
	}
	return l
}

// serveOption selects what serveLoopback serves and how.
type serveOption int

const (
	// grpcReceiver serves the OTLP/gRPC receiver instead of HTTP.
	grpcReceiver serveOption = iota + 1
	// connLimit bounds the listener to MaxConnections, as Run does.
	connLimit
)

// served is a server serving on loopback until the test ends.
type served struct {
	Addr   string // host:port
	URL    string // http://host:port; a TLS web config's clients use "https://"+Addr
	cancel context.CancelFunc
	done   chan struct{} // closed when serving returned
	err    error         // what serving returned, set before done closes
}

// stop ends serving and waits until it has; later calls return at once.
func (sv *served) stop() {
	sv.cancel()
	<-sv.done
}

// serveLoopback serves s (HTTP, or with grpcReceiver the OTLP/gRPC
// receiver) on a free loopback port until the test ends, or stop. The
// web config of s applies. Serving that returns an error fails the
// test at cleanup; one that fails to start also closes the listener, so
// the test's requests fail at once rather than wait.
func serveLoopback(tb testing.TB, s *Server, opts ...serveOption) *served {
	tb.Helper()
	overGRPC, limit := false, false
	for _, o := range opts {
		switch o {
		case grpcReceiver:
			overGRPC = true
		case connLimit:
			limit = true
		}
	}
	raw := listenLoopback(tb)
	l := raw
	if limit {
		l = s.limit(raw)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sv := &served{Addr: raw.Addr().String(), URL: "http://" + raw.Addr().String(), cancel: cancel, done: make(chan struct{})}
	what := "HTTP server"
	if overGRPC {
		what = "OTLP/gRPC receiver"
	}
	go func() {
		defer close(sv.done)
		var err error
		if overGRPC {
			err = s.ServeGRPC(ctx, l)
		} else {
			err = s.Serve(ctx, l)
		}
		if ctx.Err() == nil {
			_ = raw.Close() // stopped early: refuse the test's requests
			if err == nil {
				err = errors.New("stopped before the test ended")
			}
		}
		sv.err = err
	}()
	tb.Cleanup(func() {
		sv.cancel()
		select {
		case <-sv.done:
		case <-time.After(time.Minute):
			tb.Errorf("%s on %s did not stop within a minute", what, sv.Addr)
			return
		}
		if sv.err != nil {
			tb.Errorf("%s on %s: %v", what, sv.Addr, sv.err)
		}
	})
	return sv
}

// dialOTLP opens a gRPC connection to the OTLP receiver at addr with
// creds (TLS, or insecure.NewCredentials() for plaintext) and returns its
// metrics client and the connection's close. The caller defers the close
// where the connection must end: before the receiver stops, or after one
// export on a fresh connection.
func dialOTLP(tb testing.TB, addr string, creds credentials.TransportCredentials) (colmetricpb.MetricsServiceClient, func()) {
	tb.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		tb.Fatal(err)
	}
	return colmetricpb.NewMetricsServiceClient(conn), func() { _ = conn.Close() }
}

// errorsTB records the errors and cleanups of a test, to check what
// serveLoopback reports.
type errorsTB struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *errorsTB) Helper()          {}
func (r *errorsTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *errorsTB) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// serveLoopback fails the test, never skips it, when the server cannot
// start, and refuses connections at once; a server that serves until
// cleanup fails nothing.
func TestServeLoopback(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "web.yml")
	missing := filepath.Join(filepath.Dir(broken), "missing.pem")
	if err := os.WriteFile(broken, []byte("tls_server_config:\n  cert_file: "+missing+"\n  key_file: "+missing+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		webCfg  string
		opts    []serveOption
		wantErr string
	}{
		{"http", "", nil, ""},
		{"grpc-limited", "", []serveOption{grpcReceiver, connLimit}, ""},
		{"http-broken-tls", broken, nil, "HTTP server"},
		{"grpc-broken-tls", broken, []serveOption{grpcReceiver}, "OTLP/gRPC receiver"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := hostileServer(t, Config{WebConfigFile: c.webCfg})
			rec := &errorsTB{TB: t}
			sv := serveLoopback(rec, s, c.opts...)
			if c.wantErr != "" {
				<-sv.done
				if conn, err := net.Dial("tcp", sv.Addr); err == nil {
					_ = conn.Close()
					t.Errorf("%s accepts connections after failing to start", sv.Addr)
				}
			} else if conn, err := net.Dial("tcp", sv.Addr); err != nil {
				t.Errorf("dial %s: %v", sv.Addr, err)
			} else {
				_ = conn.Close()
			}
			if len(rec.cleanups) != 1 {
				t.Fatalf("%d cleanups registered, want 1", len(rec.cleanups))
			}
			rec.cleanups[0]()
			switch {
			case c.wantErr == "" && len(rec.errs) != 0:
				t.Errorf("errors from a server that served: %q", rec.errs)
			case c.wantErr != "" && (len(rec.errs) != 1 || !strings.Contains(rec.errs[0], c.wantErr)):
				t.Errorf("errors %q, want one naming the %s", rec.errs, c.wantErr)
			}
		})
	}
}
