package otlp

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// Clients that send their bodies slowly hold only the bytes they sent:
// with every decoding slot's worth of slow clients connected, a normal
// export is still taken at once. Past the wire budget a request gets 503
// with Retry-After, and the budget is given back when requests end.
func TestSlowSendersHoldNoSlot(t *testing.T) {
	body, err := os.ReadFile("testdata/otlp-export-001.json")
	if err != nil {
		t.Fatal(err)
	}
	sink := newSumSink()
	// Room for four slow clients and three large bodies, each with its
	// request cost, and not for another request's cost on top.
	bodyHeld := Held(int64(len(body)))
	budget := 4*Held(1) + 3*bodyHeld + RequestCost/2
	rc := NewReceiver(sink, Options{MaxInFlight: 2, MaxWireBytes: budget})
	srv := httptest.NewServer(rc)
	defer srv.Close()

	// Four slow clients (twice the slots): headers and one byte of body,
	// then nothing.
	var slow []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() //nolint:errcheck // test cleanup
		if _, err := fmt.Fprintf(c, "POST /v1/metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", len(body)); err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
	}
	slowHeld := 4 * Held(1)
	waitFor(t, func() bool { return rc.wire.Load() == slowHeld }, "the slow clients being received")

	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("normal export beside slow senders: status %d: %s", resp.StatusCode, msg)
	}
	if sink.points == 0 {
		t.Fatal("normal export took no points")
	}
	if got := rc.wire.Load(); got != slowHeld {
		t.Errorf("wire bytes after the export %d, want the slow clients' %d", got, slowHeld)
	}

	// Three bodies' worth are being received: a fourth body overruns the
	// budget and is refused with Retry-After, not queued.
	var big []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() //nolint:errcheck // test cleanup
		if _, err := fmt.Fprintf(c, "POST /v1/metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 2*len(body)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(body); err != nil {
			t.Fatal(err)
		}
		big = append(big, c)
	}
	waitFor(t, func() bool { return rc.wire.Load() == slowHeld+3*bodyHeld }, "the large bodies' bytes")
	resp, err = http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("export past the wire budget: status %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	for _, c := range append(slow, big...) {
		_ = c.Close() // closing hands the wire budget back, checked below
	}
	waitFor(t, func() bool { return rc.wire.Load() == 0 }, "the wire budget given back")
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
