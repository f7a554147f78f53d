package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a log target written by the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// `serve --k6.json -` reads stdin (kingpin hands a lone "-" over empty),
// replays --k6.results, and stops cleanly on SIGINT with exit code 0.
func TestServeStdinAndShutdown(t *testing.T) {
	var e lockedBuffer
	var o bytes.Buffer
	results := filepath.Join("..", "..", "testdata", "k6", "generated-v2.2.0", "runA-default", "runA-out.ndjson")
	code := make(chan int, 1)
	go func() {
		code <- runCLI([]string{"serve", "--web.listen-address=127.0.0.1:0", "--k6.json", "-", "--k6.results", results}, &o, &e)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(e.String(), "stdin closed") || !strings.Contains(e.String(), "replayed results") {
		if time.Now().After(deadline) {
			t.Fatalf("server did not read stdin and the results:\n%s", e.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(e.String(), "points=1966") {
		t.Errorf("replay log lacks the point count:\n%s", e.String())
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit code %d:\n%s", c, e.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
}

func TestServeBadFlags(t *testing.T) {
	var o, e bytes.Buffer
	for _, args := range [][]string{
		{"serve", "--envelope", "no-such-envelope.yaml"},
		{"serve", "--k6.allow-tag", "bad-label"},
		{"serve", "--web.telemetry-path", "/v1/metrics"},
	} {
		e.Reset()
		if c := runCLI(args, &o, &e); c != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, c, e.String())
		}
	}
}

// --envelope takes files and folders; two envelopes of one name are
// refused with both files named.
func TestReadEnvelopes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	folder := filepath.Join(dir, "envelopes")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	second := strings.Replace(string(b), "name: ecs-native-50vu-baseline-mix\n", "name: phase3-100vu\nmatch: envelope=\"phase3-100vu\"\n", 1)
	for name, body := range map[string]string{
		filepath.Join(folder, "a.yaml"):  string(b),
		filepath.Join(folder, "b.yaml"):  second,
		filepath.Join(dir, "again.yaml"): string(b),
	} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	envs, err := readEnvelopes([]string{folder})
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 2 || envs[0].Name != "ecs-native-50vu-baseline-mix" || envs[1].Name != "phase3-100vu" || envs[1].Match != `envelope="phase3-100vu"` {
		t.Errorf("read %d envelopes: %+v", len(envs), envs)
	}
	_, err = readEnvelopes([]string{folder, filepath.Join(dir, "again.yaml")})
	if err == nil || !strings.Contains(err.Error(), "again.yaml") || !strings.Contains(err.Error(), "a.yaml") {
		t.Errorf("duplicate name: err = %v, want both files named", err)
	}
	if _, err := readEnvelopes([]string{t.TempDir()}); err == nil {
		t.Error("an empty folder was accepted")
	}
}
