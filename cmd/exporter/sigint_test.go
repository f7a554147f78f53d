package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/fixtures"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// sigintTries is how many times each kind of input is interrupted.
const sigintTries = 8

// serve stops cleanly (exit 0, within a bound) on a SIGINT that comes at
// any moment from its first log line on: while it reads its envelope and
// builds its server, while it replays a finished run, while it follows a
// file, and while OTLP requests stream in. A handler installed only after
// the envelopes are read and the server built would leave a window in
// which a SIGINT kills serve uncleanly, or is lost when the shell started
// it with SIGINT ignored (a script's background job), leaving it running.
// The binary is built once, outside the bound.
func TestServeStopsOnSIGINTAtAnyMoment(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts serve many times")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "exporter")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	envPath := filepath.Join(dir, "envelope.yaml")
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	if err := envelope.WriteFile(envPath, env, envelope.YAML); err != nil {
		t.Fatal(err)
	}
	followed := filepath.Join(dir, "follow.ndjson")
	plain, err := os.ReadFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(followed, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"serve", "--web.listen-address=127.0.0.1:0", "--envelope", envPath}
	for _, tc := range []struct {
		name string
		args []string
		otlp bool
	}{
		{"replay", []string{"--k6.results", fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-a.ndjson.gz")}, false},
		{"follow", []string{"--k6.json", followed}, false},
		{"otlp", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(len(tc.name)), 26)) // #nosec G404 -- test timing only
			for i := range sigintTries {
				// From at once to well into the work, spread over the tries.
				delay := time.Duration(rng.Int64N(int64(300*time.Millisecond))) * time.Duration(i%2)
				sigintServe(t, bin, append(append([]string{}, base...), tc.args...), tc.otlp, delay)
			}
		})
	}
}

var listenLine = regexp.MustCompile(`msg="Listening on" address=(\S+)`)

// sigintServe starts serve, waits for its first log line (and, for OTLP,
// for its address and the first accepted request), sends SIGINT after
// delay and requires a clean exit within 15 s.
func sigintServe(t *testing.T, bin string, args []string, otlp bool, delay time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log cmdlinetest.LockedBuffer
	first := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			_, _ = log.Write(append(sc.Bytes(), '\n'))
			once.Do(func() { close(first) })
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("serve logged nothing in 30 s")
	}
	if otlp {
		var a string
		select {
		case a = <-addr:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("serve did not listen:\n%s", log.String())
		}
		started := make(chan struct{})
		go pushOTLP(ctx, "http://"+a+"/v1/metrics", started)
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("no OTLP request accepted in 30 s:\n%s", log.String())
		}
	}
	time.Sleep(delay)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after SIGINT %v into its run: %v\n%s", delay, err, log.String())
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		killed := <-done
		t.Errorf("serve still ran 15 s after SIGINT %v into its run (then killed: %v):\n%s", delay, killed, log.String())
	}
}

// pushOTLP posts k6-shaped OTLP requests back to back until ctx ends,
// as k6's OpenTelemetry output does; started closes after the first is
// accepted.
func pushOTLP(ctx context.Context, url string, started chan<- struct{}) {
	once := sync.Once{}
	defer once.Do(func() { close(started) })
	for i := 0; ctx.Err() == nil; i++ {
		dp := &metricpb.NumberDataPoint{StartTimeUnixNano: 1, TimeUnixNano: uint64(2 + i),
			Value:      &metricpb.NumberDataPoint_AsDouble{AsDouble: float64(i)},
			Attributes: []*commonpb.KeyValue{{Key: "testid", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: fmt.Sprint("otlp-", i%3)}}}}}
		m := &metricpb.Metric{Name: "k6_http_reqs", Data: &metricpb.Metric_Sum{Sum: &metricpb.Sum{IsMonotonic: true,
			AggregationTemporality: metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints:             []*metricpb.NumberDataPoint{dp}}}}
		req := &colmetricpb.ExportMetricsServiceRequest{ResourceMetrics: []*metricpb.ResourceMetrics{{ScopeMetrics: []*metricpb.ScopeMetrics{{Metrics: []*metricpb.Metric{m}}}}}}
		b, err := proto.Marshal(req)
		if err != nil {
			return
		}
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return
		}
		hr.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			if strings.Contains(err.Error(), "connection refused") {
				return // shut down
			}
			continue
		}
		_ = resp.Body.Close() // status is not what is tested
		if resp.StatusCode == http.StatusOK {
			once.Do(func() { close(started) })
		}
	}
}
