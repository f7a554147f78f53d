package otlp

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/envelope-dev/envelope/internal/otlp/otlptest"
)

// mappedBytes is the memory the Go runtime has mapped, touched or not:
// what an address-space limit (ulimit -v) counts.
func mappedBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// stallDeclared opens n OTLP/HTTP requests and n OTLP/gRPC calls that
// each declare a body at the size limit and then send only its first
// bytes, and waits until the receiver holds them all.
func stallDeclared(t *testing.T, n int) *Receiver {
	t.Helper()
	rc := NewReceiver(newSumSink(), Options{})
	srv := &http.Server{Handler: rc}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(hl) }() // returns when Close runs
	t.Cleanup(func() { _ = srv.Close() })
	_, _, gaddr := grpcReceiver(t, rc)

	for range n {
		c, err := net.Dial("tcp", hl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := fmt.Fprintf(c, "POST /v1/metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: %d\r\n\r\n\x0a", DefaultMaxBody); err != nil {
			t.Fatal(err)
		}
	}
	tr := h2c()
	prefix := make([]byte, 5)
	binary.BigEndian.PutUint32(prefix[1:], DefaultMaxBody)
	for range n {
		pr, pw := io.Pipe()
		t.Cleanup(func() { _ = pw.Close() })
		req, _ := http.NewRequest(http.MethodPost, "http://"+gaddr+exportPath, pr)
		req.Header.Set("Content-Type", "application/grpc")
		req.ContentLength = DefaultMaxBody + 5
		go func() {
			if resp, err := tr.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}()
		go func() { _, _ = pw.Write(prefix) }()
	}
	waitFor(t, func() bool { return otlptest.Receiving(t) == 2*n }, "the stalled requests being received")
	if want := int64(n) * (Held(1) + Held(5)); rc.wire.Load() != want {
		t.Errorf("%d stalled requests charged %d bytes, want %d: each its request cost and the first chunk", 2*n, rc.wire.Load(), want)
	}
	return rc
}

// A declared body size reserves nothing: requests declaring the largest
// body and sending a byte of it, over HTTP (Content-Length) and gRPC
// (content-length and the message's length prefix), map little more
// memory than the wire budget charges them, not the sizes they declared
// (64 of them would reserve 1 GiB).
func TestDeclaredSizesNotReserved(t *testing.T) {
	const n = 32
	runtime.GC()
	before := mappedBytes()
	stallDeclared(t, n)
	grown := int64(mappedBytes()) - int64(before)
	// What the wire budget charges them, as much again for the server's
	// own connection and stream state, and room for the runtime's own
	// growth; the declared sizes would be 1 GiB.
	bound := 2*2*int64(n)*Held(5) + 64<<20
	t.Logf("%d stalled requests declaring %d bytes each: mapped memory grew %d bytes (bound %d)", 2*n, DefaultMaxBody, grown, bound)
	if grown > bound {
		t.Errorf("mapped memory grew %d bytes for %d stalled requests; want at most %d: declared sizes are being reserved", grown, 2*n, bound)
	}
}

// Under an address-space limit of 4 GiB (ulimit -v), 1,000 stalled
// requests each declaring the largest body (16 GiB declared in all) leave
// the process running: it is run in a child process, which dies with
// "out of memory" if the declared sizes are reserved.
func TestDeclaredSizesUnderAddressLimit(t *testing.T) {
	if n := os.Getenv("ENVELOPE_STALL_DECLARED"); n != "" {
		k, err := strconv.Atoi(n)
		if err != nil {
			t.Fatal(err)
		}
		stallDeclared(t, k)
		return
	}
	if testing.Short() {
		t.Skip("runs a child process holding 1,000 connections")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to set the address-space limit")
	}
	cmd := exec.Command("sh", "-c", `ulimit -v 4194304 && exec "$0" -test.run='^TestDeclaredSizesUnderAddressLimit$' -test.count=1`, os.Args[0])
	cmd.Env = append(os.Environ(), "ENVELOPE_STALL_DECLARED=500")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("1,000 stalled requests declaring %d bytes each under a 4 GiB address-space limit: %v\n%s", DefaultMaxBody, err, head(out, 1000))
	}
}

func head(b []byte, n int) []byte {
	return b[:min(n, len(b))]
}

// A declared size past the limit is refused before any of the body is
// read: 413 over HTTP, RESOURCE_EXHAUSTED over gRPC, nothing charged.
func TestDeclaredPastLimitRefused(t *testing.T) {
	var mu sync.Mutex
	var outcomes []string
	rc := NewReceiver(newSumSink(), Options{OnRequest: func(o string, _ int, _ error) { mu.Lock(); outcomes = append(outcomes, o); mu.Unlock() }})
	hs := httptest.NewServer(rc)
	defer hs.Close()
	_, _, gaddr := grpcReceiver(t, rc)
	for _, c := range []struct {
		name, url, ctype string
		declared         int64
		client           *http.Client
		status           func(*http.Response) string
		want             string
	}{
		{"http", hs.URL + "/v1/metrics", "application/x-protobuf", DefaultMaxBody + 1, hs.Client(),
			func(r *http.Response) string { return strconv.Itoa(r.StatusCode) }, "413"},
		{"grpc", "http://" + gaddr + exportPath, "application/grpc", DefaultMaxBody + 6, h2c(),
			func(r *http.Response) string { return r.Header.Get("Grpc-Status") }, strconv.Itoa(codeResourceExhausted)},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr, pw := io.Pipe() // the body never comes
			defer pw.Close()    //nolint:errcheck // test cleanup
			req, _ := http.NewRequest(http.MethodPost, c.url, pr)
			req.Header.Set("Content-Type", c.ctype)
			req.ContentLength = c.declared
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if got := c.status(resp); got != c.want {
				t.Errorf("declaring %d bytes: status %s, want %s", c.declared, got, c.want)
			}
			if n := rc.wire.Load(); n != 0 {
				t.Errorf("%d bytes charged after the refusal, want 0", n)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(outcomes, ",") != OutcomeTooLarge+","+OutcomeTooLarge {
		t.Errorf("outcomes %v, want two %q", outcomes, OutcomeTooLarge)
	}
}
