package stack

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/promproc"
)

// The stack takes OTLP over gRPC, k6's default OTLP protocol: the real
// capture of a k6 run's gRPC exports, sent with a gRPC client to the
// stack's gRPC address, reaches Prometheus with every request of the
// run's summary; an exporter without a gRPC address has none.
func TestStackTakesOTLPGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Prometheus")
	}
	ctx := context.Background()
	bin, err := promproc.GoTool(ctx, "prometheus")
	if err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	withGRPC, err := exporter.New(exporter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	without, err := exporter.New(exporter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Start(ctx, Options{
		Dir:            t.TempDir(),
		Exporters:      []Target{{Server: withGRPC, GRPCAddr: "127.0.0.1:0"}, {Server: without}},
		PrometheusBin:  bin,
		ScrapeInterval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close() //nolint:errcheck // test cleanup
	if len(st.OTLPGRPCAddrs) != 2 || st.OTLPGRPCAddrs[0] == "" || st.OTLPGRPCAddrs[1] != "" {
		t.Fatalf("OTLP/gRPC addresses %q, want one for the first exporter only", st.OTLPGRPCAddrs)
	}

	conn, err := grpc.NewClient(st.OTLPGRPCAddrs[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() //nolint:errcheck // test cleanup
	client := colmetricpb.NewMetricsServiceClient(conn)
	calls := fixtures.Glob(t, "k6/baseline-mix-v2.2.0/otlp-grpc-exponential-otlp/grpc-*.bin")
	if len(calls) == 0 {
		t.Fatal("no gRPC capture")
	}
	for _, p := range calls {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(b[5:], req); err != nil { // past the gRPC message prefix
			t.Fatalf("%s: %v", p, err)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = client.Export(cctx, req)
		cancel()
		if err != nil {
			t.Fatalf("%s: Export: %v", p, err)
		}
	}

	var summary struct {
		Metrics map[string]struct {
			Count float64 `json:"count"`
		} `json:"metrics"`
	}
	b, err := os.ReadFile(fixtures.Path(t, "k6/baseline-mix-v2.2.0/otlp-grpc-exponential.summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &summary); err != nil {
		t.Fatal(err)
	}
	want := summary.Metrics["http_reqs"].Count
	var got []Sample
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		got, err = Query(ctx, st.PrometheusURL, `sum(k6_http_reqs_total)`, time.Time{})
		if err == nil && len(got) == 1 && got[0].Value == want {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(got) != 1 || got[0].Value != want {
		t.Fatalf("sum(k6_http_reqs_total) in Prometheus: %v %v, want the summary's %v", got, err, want)
	}
}
