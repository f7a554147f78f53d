package otlp

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// grpcReceiver serves rc over plaintext HTTP/2 on loopback and returns a
// real gRPC client of it (the library k6's OpenTelemetry output uses).
func grpcReceiver(t *testing.T, rc *Receiver) (colmetricpb.MetricsServiceClient, *grpc.ClientConn, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := rc.GRPCServer(nil)
	go func() { _ = gs.Serve(l) }() // returns when Close runs; a failed start fails the calls
	t.Cleanup(func() { _ = gs.Close() })
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return colmetricpb.NewMetricsServiceClient(conn), conn, l.Addr().String()
}

func k6Export(t *testing.T, i int) *colmetricpb.ExportMetricsServiceRequest {
	t.Helper()
	body, err := os.ReadFile(fixtures.Path(t, fmt.Sprintf("k6/baseline-mix-v2.2.0/otlp-sample-otlp/otlp-%03d.bin", i)))
	if err != nil {
		t.Fatal(err)
	}
	req := &colmetricpb.ExportMetricsServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		t.Fatal(err)
	}
	return req
}

// Each refusal reaches a real gRPC client as the status code OTLP
// exporters act on, and a partial success as the reply's field.
func TestGRPCStatuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var outcomes []string
	sink := newSumSink()
	rc := NewReceiver(sink, Options{MaxBody: 64 << 10, OnRequest: func(o string, _ int, _ error) { outcomes = append(outcomes, o) }})
	client, conn, _ := grpcReceiver(t, rc)

	// gzip, as an exporter with compression on sends it.
	if _, err := client.Export(ctx, k6Export(t, 1), grpc.UseCompressor(gzip.Name)); err != nil {
		t.Fatalf("gzip export: %v", err)
	}
	if sink.points == 0 {
		t.Fatal("gzip export took no points")
	}

	// One bad point of two: taken, with partial_success.
	bad := sumReq(1, 5)
	bad.ResourceMetrics[0].ScopeMetrics[0].Metrics = append(bad.ResourceMetrics[0].ScopeMetrics[0].Metrics, &metricpb.Metric{
		Name: "k6_data_sent", Data: &metricpb.Metric_Sum{Sum: &metricpb.Sum{IsMonotonic: true,
			AggregationTemporality: metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints:             []*metricpb.NumberDataPoint{{StartTimeUnixNano: 1, TimeUnixNano: 2, Value: &metricpb.NumberDataPoint_AsDouble{AsDouble: math.NaN()}}}}}})
	resp, err := client.Export(ctx, bad)
	if err != nil {
		t.Fatalf("partial export: %v", err)
	}
	if ps := resp.GetPartialSuccess(); ps.GetRejectedDataPoints() != 1 || ps.GetErrorMessage() == "" {
		t.Errorf("partial success %v, want 1 rejected with a message", ps)
	}

	// Over the message limit, before and after decompression.
	big := &colmetricpb.ExportMetricsServiceRequest{}
	for i := range 6 {
		big.ResourceMetrics = append(big.ResourceMetrics, k6Export(t, 1+i%5).ResourceMetrics...)
	}
	if n := proto.Size(big); n <= 64<<10 {
		t.Fatalf("test request of %d bytes is within the limit", n)
	}
	if _, err := client.Export(ctx, big); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("oversized export: %v, want ResourceExhausted", err)
	}
	if _, err := client.Export(ctx, big, grpc.UseCompressor(gzip.Name)); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("oversized gzip export: %v, want ResourceExhausted", err)
	}

	// Another method of the service, or another service.
	err = conn.Invoke(ctx, "/opentelemetry.proto.collector.trace.v1.TraceService/Export", &colmetricpb.ExportMetricsServiceRequest{}, &colmetricpb.ExportMetricsServiceResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("trace export: %v, want Unimplemented", err)
	}
	want := []string{OutcomeOK, OutcomePartial, OutcomeTooLarge, OutcomeTooLarge, OutcomeMethod}
	if len(outcomes) != len(want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
	for i := range want {
		if outcomes[i] != want[i] {
			t.Errorf("outcome %d = %s, want %s", i, outcomes[i], want[i])
		}
	}
}

// Malformed bodies sent by hand over HTTP/2 are refused with a status,
// never taken.
func TestGRPCMalformed(t *testing.T) {
	sink := newSumSink()
	rc := NewReceiver(sink, Options{})
	_, _, addr := grpcReceiver(t, rc)
	msg, _ := proto.Marshal(k6Export(t, 1))
	frame := func(flag byte, n int, payload []byte) []byte {
		b := []byte{flag, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], uint32(n))
		return append(b, payload...)
	}
	for _, tc := range []struct {
		name, encoding string
		body           []byte
		code           string
	}{
		{"no message", "", []byte{0, 0}, "3"},
		{"cut off", "", frame(0, len(msg)+10, msg), "3"},
		{"two messages", "", append(frame(0, len(msg), msg), frame(0, len(msg), msg)...), "3"},
		{"bad flag", "", frame(7, len(msg), msg), "3"},
		{"compressed without encoding", "", frame(1, len(msg), msg), "13"},
		{"unknown encoding", "snappy", frame(1, len(msg), msg), "12"},
		{"not gzip", "gzip", frame(1, len(msg), msg), "13"},
		{"not protobuf", "", frame(0, 3, []byte{0xff, 0xff, 0xff}), "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+exportPath, bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/grpc")
			if tc.encoding != "" {
				req.Header.Set("Grpc-Encoding", tc.encoding)
			}
			resp, err := h2c().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if got := resp.Header.Get("Grpc-Status"); got != tc.code || resp.Header.Get("Grpc-Message") == "" {
				t.Errorf("grpc-status %q (%q), want %s with a message", got, resp.Header.Get("Grpc-Message"), tc.code)
			}
		})
	}
	if sink.points != 0 {
		t.Errorf("%d points taken from malformed calls", sink.points)
	}
}

// h2c is an HTTP/2 client with prior knowledge, as plaintext gRPC is.
func h2c() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}, Timeout: 10 * time.Second}
}

// A gRPC client that sends its message slowly holds only the bytes it
// sent, never a decoding slot: with twice the slots' worth of them
// stalled, an export from a real gRPC client is taken at once.
func TestGRPCSlowSendersHoldNoSlot(t *testing.T) {
	sink := newSumSink()
	rc := NewReceiver(sink, Options{MaxInFlight: 2})
	client, _, addr := grpcReceiver(t, rc)
	tr := h2c()
	for range 4 {
		pr, pw := io.Pipe()
		t.Cleanup(func() { _ = pw.Close() })
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+exportPath, pr)
		req.Header.Set("Content-Type", "application/grpc")
		go func() {
			if resp, err := tr.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}()
		// The length prefix of a 1 KiB message and one byte of it.
		if _, err := pw.Write([]byte{0, 0, 0, 4, 0, 1}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return rc.wire.Load() == 4*Held(6) }, "the slow calls being received")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := client.Export(ctx, k6Export(t, 2)); err != nil {
		t.Fatalf("export beside slow senders: %v", err)
	}
	if sink.points == 0 || len(rc.slots) != 0 {
		t.Errorf("points %d, slots held %d; want points taken and no slot held", sink.points, len(rc.slots))
	}
}

// Stalled calls are bounded in number: each is charged RequestCost when
// its message starts, so past the budget a call is refused at once with
// UNAVAILABLE instead of holding a goroutine and buffers.
func TestGRPCStalledCallsBounded(t *testing.T) {
	rc := NewReceiver(newSumSink(), Options{MaxWireBytes: 3*Held(6) + 100})
	_, _, addr := grpcReceiver(t, rc)
	tr := h2c()
	stall := func() (*io.PipeWriter, chan string) {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+exportPath, pr)
		req.Header.Set("Content-Type", "application/grpc")
		got := make(chan string, 1)
		go func() {
			resp, err := tr.Do(req)
			if err != nil {
				got <- err.Error()
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			got <- resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status")
		}()
		// A call refused at once closes its body before this write: the
		// write's error says nothing then, and the charge checks below
		// see the bytes of those that were held.
		go func() { _, _ = pw.Write([]byte{0, 0, 0, 4, 0, 1}) }()
		return pw, got
	}
	var held []chan string
	for range 3 {
		pw, got := stall()
		t.Cleanup(func() { _ = pw.Close() })
		held = append(held, got)
	}
	waitFor(t, func() bool { return rc.wire.Load() == 3*Held(6) }, "three stalled calls charged")
	pw, got := stall()
	defer pw.Close() //nolint:errcheck // test cleanup
	select {
	case s := <-got:
		if s != "14" {
			t.Errorf("a fourth stalled call: grpc-status %q, want 14 (UNAVAILABLE)", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a fourth stalled call past the budget was not refused at once")
	}
	for _, g := range held {
		select {
		case s := <-g:
			t.Errorf("a stalled call within the budget ended early: %q", s)
		default:
		}
	}
}
