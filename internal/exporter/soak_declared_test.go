//go:build linux

package exporter

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// declaredResult is what the stalled-declarations attack measured.
type declaredResult struct {
	Stalled   int     `json:"stalled"`    // calls being received when measured
	Mapped    float64 `json:"mapped_mib"` // memory the Go runtime mapped
	Peak      float64 `json:"peak_rss_mib"`
	ExportErr string  `json:"export_err"` // a real export beside them
}

// The attack of 1,000 gRPC calls each declaring a 16 MiB message
// (content-length and length prefix) and sending only the prefix, under
// an address-space limit of 4 GiB and default flags: the exporter keeps
// running, the runtime maps little more than the wire budget, and a
// real k6 export beside them is taken. Reserving the declared sizes
// maps 16 GiB and the child dies ("runtime: out of memory").
func TestSoakDeclaredBodies(t *testing.T) {
	const calls = 1000
	if _, ok := soakChild("TestSoakDeclaredBodies"); ok {
		lim := &syscall.Rlimit{Cur: 4 << 30, Max: 4 << 30}
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, lim); err != nil {
			t.Fatalf("setting the address-space limit: %v", err)
		}
		reportSoakChild(t, stallDeclared(t, calls))
		return
	}
	if testing.Short() {
		t.Skip("runs a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSoakDeclaredBodies$", "-test.v")
	cmd.Env = append(os.Environ(), soakChildTest+"=TestSoakDeclaredBodies")
	out, err := cmd.CombinedOutput()
	if err != nil {
		// A dying runtime prints every goroutine: its first lines say why.
		t.Fatalf("%d stalled calls declaring 16 MiB each under a 4 GiB address-space limit: %v\n%s", calls, err, out[:min(len(out), 2000)])
	}
	var r declaredResult
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, soakResultLine); ok {
			if err := json.Unmarshal([]byte(v), &r); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d stalled calls: mapped %.0f MiB, peak RSS %.0f MiB, export beside them: %q", r.Stalled, r.Mapped, r.Peak, r.ExportErr)
	if r.Stalled != calls {
		t.Errorf("%d calls being received when measured, want %d", r.Stalled, calls)
	}
	// The wire budget (64 MiB by default) is what they may hold; the
	// bounds leave room for the runtime, the server and the attacker.
	if r.Mapped == 0 || r.Mapped > 512 {
		t.Errorf("mapped %.0f MiB, bound 512", r.Mapped)
	}
	if r.Peak == 0 || r.Peak > 256 {
		t.Errorf("peak RSS %.0f MiB, bound 256", r.Peak)
	}
	if r.ExportErr != "" {
		t.Errorf("a real export beside the stalled calls: %s", r.ExportErr)
	}
}

// stallDeclared opens n stalled calls against an exporter with default
// flags, waits until it is receiving all of them, and measures.
func stallDeclared(t *testing.T, n int) declaredResult {
	resetSoakPeak(t)
	st, stop := startSoak(t)
	defer stop()
	addr, cancel := st.serveGRPC(t)
	defer cancel()
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p}
	defer tr.CloseIdleConnections()
	prefix := make([]byte, 5)
	binary.BigEndian.PutUint32(prefix[1:], otlp.DefaultMaxBody)
	for range n {
		pr, pw := io.Pipe()
		defer pw.Close() //nolint:errcheck // ends the call
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", pr)
		req.Header.Set("Content-Type", "application/grpc")
		req.ContentLength = otlp.DefaultMaxBody + 5
		go func() {
			if resp, err := tr.RoundTrip(req); err == nil {
				_ = resp.Body.Close()
			}
		}()
		go func() { _, _ = pw.Write(prefix) }()
	}
	var r declaredResult
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r.Stalled = receiving(t); r.Stalled >= n {
			break
		}
	}
	// A real k6 export is taken beside them.
	body, err := os.ReadFile(fixtures.Path(t, "k6/baseline-mix-v2.2.0/otlp-sample-otlp/otlp-001.bin"))
	if err != nil {
		t.Fatal(err)
	}
	req := &colmetricpb.ExportMetricsServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		t.Fatal(err)
	}
	client, closeConn := dialOTLP(t, addr, insecure.NewCredentials())
	defer closeConn()
	ctx, cancelCtx := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelCtx()
	if _, err := client.Export(ctx, req); err != nil {
		r.ExportErr = err.Error()
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	r.Mapped = float64(s[0].Value.Uint64()) / (1 << 20)
	r.Peak = procKiB(t, "VmHWM") / 1024
	return r
}

// receiving counts the goroutines reading an OTLP body: the calls being
// received.
func receiving(t *testing.T) int {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, rec := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(rec, "otlp.(*Receiver).readBody") {
			continue
		}
		count, _, _ := strings.Cut(rec, " @")
		k, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil {
			t.Fatalf("goroutine profile record %.80q: %v", rec, err)
		}
		total += k
	}
	return total
}
