package exporter

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/crypto/bcrypt"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck // response body, only read
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEndpoints(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, c := range []struct {
		path string
		code int
		has  string
	}{
		{"/", 200, "/metrics"},
		{"/-/healthy", 200, "Healthy"},
		{"/-/ready", 200, "Ready"},
		{"/metrics", 200, "envelope_exporter_build_info"},
		{"/metrics", 200, "go_goroutines"},
	} {
		code, body := get(t, srv.URL+c.path)
		if code != c.code || !strings.Contains(body, c.has) {
			t.Errorf("GET %s: %d, want %d with %q", c.path, code, c.code, c.has)
		}
	}
	s.SetReady(false)
	if code, _ := get(t, srv.URL+"/-/ready"); code != http.StatusServiceUnavailable {
		t.Errorf("not ready: %d", code)
	}
	for _, p := range []string{"/v1/metrics", "/-/ready", "metrics"} {
		if _, err := New(Config{TelemetryPath: p}); err == nil {
			t.Errorf("telemetry path %q accepted", p)
		}
	}
}

// OTLP pushed by k6 lands in the same series as NDJSON, and requests are
// counted by outcome.
func TestOTLPIntoSeries(t *testing.T) {
	s, err := New(Config{DisableExporterMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for i := 1; i <= 5; i++ {
		b, err := os.ReadFile(fixtures.Path(t, fmt.Sprintf("k6/baseline-mix-v2.2.0/otlp-sample-otlp/otlp-%03d.bin", i)))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(srv.URL+"/v1/metrics", "application/x-protobuf", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	resp, _ := http.Post(srv.URL+"/v1/metrics", "text/plain", strings.NewReader("x"))
	_ = resp.Body.Close()
	mf := gatherFamily(t, s, "k6_http_reqs_total")
	total := 0.0
	for _, m := range mf.GetMetric() {
		total += m.GetCounter().GetValue()
	}
	if total != 1146 { // the run's summary: http_reqs count 1146
		t.Errorf("k6_http_reqs_total sums to %v, want 1146", total)
	}
	h := gatherFamily(t, s, "k6_http_req_duration_seconds")
	var count uint64
	for _, m := range h.GetMetric() {
		count += m.GetHistogram().GetSampleCount()
		if m.GetHistogram().GetSchema() != NativeSchema {
			t.Errorf("no native buckets")
		}
	}
	if count != 1146 {
		t.Errorf("duration samples %d, want 1146", count)
	}
	if got := testutil.ToFloat64(s.otlpReqs.WithLabelValues("ok")); got != 5 {
		t.Errorf("ok requests %v", got)
	}
	if got := testutil.ToFloat64(s.otlpReqs.WithLabelValues("unsupported_media_type")); got != 1 {
		t.Errorf("415 requests %v", got)
	}
}

// A followed file: lines appended later are ingested, the lag gauge is
// set, and the follower stops with its context.
func TestFollowIngests(t *testing.T) {
	s, err := New(Config{DisableExporterMetrics: true, FollowPoll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "live.ndjson")
	src, err := os.ReadFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(src), "\n")
	half := len(lines) / 2
	if err := os.WriteFile(path, []byte(strings.Join(lines[:half], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Follow(ctx, path) }()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(lines[half:], "")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Reference: the same file replayed into a fresh server.
	ref, _ := New(Config{DisableExporterMetrics: true})
	want, _ := ref.ReplayFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(s.points.WithLabelValues(SourceNDJSON)) < float64(want) {
		if time.Now().After(deadline) {
			t.Fatalf("ingested %v of %d points", testutil.ToFloat64(s.points.WithLabelValues(SourceNDJSON)), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, wantTxt := render(t, &onlyK6{s}), render(t, &onlyK6{ref}); string(got) != string(wantTxt) {
		t.Error("followed series differ from the replayed ones")
	}
	if lag := testutil.ToFloat64(s.lag.WithLabelValues(SourceNDJSON)); lag <= 0 {
		t.Errorf("lag = %v, want > 0 for a file written in the past", lag)
	}
}

// onlyK6 gathers the k6 series of a server, without created timestamps.
type onlyK6 struct{ s *Server }

func (o *onlyK6) Gather() (mfs []*dto.MetricFamily, err error) {
	mfs, err = o.s.K6Gatherer().Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.Counter != nil {
				m.Counter.CreatedTimestamp = nil
			}
			if m.Histogram != nil {
				m.Histogram.CreatedTimestamp = nil
			}
		}
	}
	return mfs, err
}

// Run serves HTTP and, when asked, OTLP/gRPC, and stops with its context.
func TestRunAndShutdown(t *testing.T) {
	httpPort, grpcPort := freePort(t), freePort(t)
	s, err := New(Config{DisableExporterMetrics: true,
		ListenAddresses: []string{"127.0.0.1:" + strconv.Itoa(httpPort)},
		OTLPGRPCAddress: "127.0.0.1:" + strconv.Itoa(grpcPort)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	url := "http://127.0.0.1:" + strconv.Itoa(httpPort) + "/-/healthy"
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(grpcPort))
	if err != nil {
		t.Fatalf("gRPC port not listening: %v", err)
	}
	_ = conn.Close() // only dialled to prove the port listens
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after shutdown", err)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("still serving after shutdown")
	}
}

// --web.config.file goes through the exporter-toolkit: basic auth applies
// to every endpoint.
func TestWebConfigBasicAuth(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfgPath, []byte("basic_auth_users:\n  prom: "+string(hash)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{DisableExporterMetrics: true, WebConfigFile: cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	sv := serveLoopback(t, s)
	url := sv.URL + "/metrics"
	for _, c := range []struct {
		user, pass string
		want       int
	}{{"", "", 401}, {"prom", "wrong", 401}, {"prom", "secret", 200}} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if c.user != "" {
			req.SetBasicAuth(c.user, c.pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("user %q: status %d, want %d", c.user, resp.StatusCode, c.want)
		}
	}
	sv.stop()
	if sv.err != nil {
		t.Fatal(sv.err)
	}
}
