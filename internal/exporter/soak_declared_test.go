//go:build linux

package exporter

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/otlp"
	"github.com/envelope-dev/envelope/internal/otlp/otlptest"
)

// declaredResult is what the stalled-declarations attack measured.
type declaredResult struct {
	Stalled   int            `json:"stalled"`    // calls being received when measured
	Refused   map[string]int `json:"refused"`    // the others' grpc-status
	Mapped    float64        `json:"mapped_mib"` // memory the Go runtime mapped
	Peak      float64        `json:"peak_rss_mib"`
	ExportErr string         `json:"export_err"` // a real export once they end
}

// The attack of 1,000 gRPC calls each declaring a 16 MiB message
// (content-length and length prefix) and sending only the prefix, under
// an address-space limit of 4 GiB and default flags: the exporter keeps
// running, holds what its wire budget allows and refuses the rest at once
// (UNAVAILABLE), the runtime maps little more than that budget, and a
// real k6 export is taken once the calls end. Reserving the declared
// sizes maps 16 GiB and the child dies ("runtime: out of memory").
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
	t.Logf("%d calls: %d being received, refused %v; mapped %.0f MiB, peak RSS %.0f MiB; export after them: %q", calls, r.Stalled, r.Refused, r.Mapped, r.Peak, r.ExportErr)
	// The wire budget holds 64 KiB and a first chunk per call: most of
	// them, and the others are refused as busy, to be retried.
	if r.Stalled < calls*9/10 || r.Stalled+r.Refused["14"] != calls {
		t.Errorf("%d calls being received and %v refused; want at least %d received, the rest refused with 14 (UNAVAILABLE)", r.Stalled, r.Refused, calls*9/10)
	}
	// The wire budget (64 MiB by default) is what the exporter may hold;
	// the attacker's HTTP/2 client shares the process and reserves a
	// write buffer of up to 512 KiB per call (measured: 175-395 MiB in
	// all). Declared sizes reserved would be 16 GiB.
	if r.Mapped == 0 || r.Mapped > 1024 {
		t.Errorf("mapped %.0f MiB, bound 1024", r.Mapped)
	}
	if r.Peak == 0 || r.Peak > 256 {
		t.Errorf("peak RSS %.0f MiB, bound 256", r.Peak)
	}
	if r.ExportErr != "" {
		t.Errorf("a real export once the stalled calls ended: %s", r.ExportErr)
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
	var mu sync.Mutex
	var r declaredResult
	answers := map[string]int{} // grpc-status of the calls answered
	writers := make([]*io.PipeWriter, 0, n)
	for range n {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", pr)
		req.Header.Set("Content-Type", "application/grpc")
		req.ContentLength = otlp.DefaultMaxBody + 5
		go func() {
			status := "error"
			if resp, err := tr.RoundTrip(req); err == nil {
				status = resp.Header.Get("Grpc-Status")
				_ = resp.Body.Close()
			}
			mu.Lock()
			answers[status]++
			mu.Unlock()
		}()
		go func() { _, _ = pw.Write(prefix) }()
	}
	// Every call is being received or answered; the answered ones are
	// those refused, since a stalled call is never answered.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		done := 0
		for _, k := range answers {
			done += k
		}
		mu.Unlock()
		if r.Stalled = otlptest.Receiving(t); r.Stalled+done >= n {
			break
		}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	r.Mapped = float64(s[0].Value.Uint64()) / (1 << 20)
	r.Peak = procKiB(t, "VmHWM") / 1024
	mu.Lock()
	r.Refused = maps.Clone(answers)
	mu.Unlock()
	for _, pw := range writers {
		_ = pw.CloseWithError(io.ErrUnexpectedEOF) // the call ends cut off
	}
	// A real k6 export is taken once they end.
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
	// The budget comes back as the cut-off calls end.
	for {
		_, err := client.Export(ctx, req)
		if err == nil || status.Code(err) != codes.Unavailable || ctx.Err() != nil {
			if err != nil {
				r.ExportErr = err.Error()
			}
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
}
