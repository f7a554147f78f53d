package exporter

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/envelope-dev/envelope/internal/otlp"
)

// A 404 for an unknown run names the testid, clipped: a reply never
// echoes back whatever a client sent.
func TestDeleteUnknownRunClipsEcho(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   string
		want string
	}{
		{"short-run", `no series with testid \"short-run\"`},
		{strings.Repeat("x", 100000), "(100000 bytes)"},
		{strings.Repeat("é", 200), "(400 bytes)"}, // cut at a rune boundary
	} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/api/v1/runs/"+c.id, nil))
		body := rec.Body.String()
		if rec.Code != http.StatusNotFound || !strings.Contains(body, c.want) || len(body) > 512 {
			t.Errorf("DELETE of a %d-byte testid: %d, %d-byte body %q", len(c.id), rec.Code, len(body), body[:min(len(body), 200)])
		}
	}
}

// A body that does not arrive within the read timeout is counted as a
// timeout, not as a malformed request.
func TestSlowBodyCountedAsTimeout(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() //nolint:errcheck // test connection
	_, _ = io.WriteString(c, "POST /v1/metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\n0123456789")
	timeouts := s.otlpReqs.WithLabelValues(otlp.OutcomeTimeout)
	for deadline := time.Now().Add(10 * time.Second); testutil.ToFloat64(timeouts) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no timeout outcome counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := testutil.ToFloat64(s.otlpReqs.WithLabelValues(otlp.OutcomeBadRequest)); got != 0 {
		t.Errorf("bad_request outcome %v for a slow body, want 0", got)
	}
}
