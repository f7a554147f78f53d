package cloudwatch

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/envelope-dev/envelope/internal/promtest"
)

var update = flag.Bool("update", false, "rewrite the golden exposition files in testdata")

// fixedNow is the poll time the recorded response was written for: with
// the default 3m delay the request ends at 09:57 and the newest recorded
// point is the 09:56 period.
var fixedNow = time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)

func newTestPoller(t *testing.T, cfg Config, api API) *Poller {
	t.Helper()
	p, err := NewPoller(cfg, api, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return fixedNow }
	// Backoff sleeps are recorded, not slept, so tests stay fast.
	p.sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	return p
}

func baseConfig(url string) Config {
	return Config{
		Region:            "us-east-1",
		Cluster:           "arn:aws:ecs:us-east-1:123456789012:cluster/perf",
		Services:          []string{"api", "worker"},
		ContainerInsights: true,
		Endpoint:          url,
	}
}

// exposition renders the collector's output without the poll duration,
// the only value that changes between runs.
func exposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	return promtest.Exposition(t, c, "envelope_exporter_cloudwatch_poll_duration_seconds")
}

func familyNames(text []byte) []string {
	var names []string
	for _, line := range strings.Split(string(text), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			names = append(names, f[2])
		}
	}
	return names
}

func TestGolden(t *testing.T) {
	fake, srv := newFakeCloudWatch(t, filepath.Join("testdata", "get_metric_data.json"))
	fake.pageSize = 7 // force NextToken pagination
	cfg := baseConfig(srv.URL)
	cfg.MaxQueries = 10 // 26 queries -> 3 calls, each paginated
	p := newTestPoller(t, cfg, testAPI(srv.URL, nil))
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := NewCollector(p)
	golden := filepath.Join("testdata", "metrics.txt")
	if *update {
		if err := os.WriteFile(golden, exposition(t, c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, bytes.NewReader(want), familyNames(want)...); err != nil {
		t.Fatalf("%v\n(rerun with -update if the change is intended)", err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		t.Errorf("lint: %s: %s", pr.Metric, pr.Text)
	}

	// The wire-level request: batches of <= MaxQueries, pages followed,
	// the short cluster name as dimension, a 60s period, and a window
	// ending at now - delay aligned to the period.
	fake.mu.Lock()
	defer fake.mu.Unlock()
	var firstPages, total int
	for _, r := range fake.requests {
		if len(r.ids) > cfg.MaxQueries {
			t.Errorf("request with %d queries, max %d", len(r.ids), cfg.MaxQueries)
		}
		if r.nextToken == "" {
			firstPages++
			total += len(r.ids)
		}
		if r.dims["ClusterName"] != "perf" {
			t.Errorf("ClusterName dimension = %q, want the short name", r.dims["ClusterName"])
		}
		if r.period != 60 {
			t.Errorf("period = %d", r.period)
		}
		if want := time.Date(2026, 11, 30, 9, 57, 0, 0, time.UTC); !r.end.Equal(want) {
			t.Errorf("EndTime = %v, want %v", r.end, want)
		}
		if want := time.Date(2026, 11, 30, 9, 47, 0, 0, time.UTC); !r.start.Equal(want) {
			t.Errorf("StartTime = %v, want %v", r.start, want)
		}
	}
	if firstPages != 3 || total != 26 {
		t.Errorf("%d batches with %d queries, want 3 with 26", firstPages, total)
	}
	if len(fake.requests) <= firstPages {
		t.Errorf("no NextToken page was requested")
	}
}

func TestBatches(t *testing.T) {
	qs := buildQueries(make([]string, 80), true) // 80 services x 13 = 1040 queries
	for _, tt := range []struct {
		n     int
		sizes []int
	}{
		{0, []int{500, 500, 40}},
		{500, []int{500, 500, 40}},
		{1000, []int{500, 500, 40}}, // capped at the API limit
		{400, []int{400, 400, 240}},
	} {
		var sizes []int
		for _, b := range batches(qs, tt.n) {
			sizes = append(sizes, len(b))
		}
		if !equalInts(sizes, tt.sizes) {
			t.Errorf("batches(%d) = %v, want %v", tt.n, sizes, tt.sizes)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRetries: throttling and credential errors are retried with
// backoff, counted by reason, and the last values stay served.
func TestRetries(t *testing.T) {
	tests := []struct {
		name       string
		failures   []fakeFailure
		wantUp     float64
		wantReason string
		wantCount  float64
	}{
		{"throttled then ok", []fakeFailure{
			{400, "Throttling", "com.amazon.coral.availability#ThrottlingException"},
			{400, "Throttling", "com.amazon.coral.availability#ThrottlingException"},
		}, 1, "throttled", 2},
		{"bad token then ok", []fakeFailure{
			{403, "InvalidClientTokenId", "com.amazon.coral.service#UnrecognizedClientException"},
		}, 1, "credentials", 1},
		{"throttled past all attempts", []fakeFailure{
			{400, "Throttling", "x#ThrottlingException"}, {400, "Throttling", "x#ThrottlingException"},
			{400, "Throttling", "x#ThrottlingException"}, {400, "Throttling", "x#ThrottlingException"},
		}, 0, "throttled", 4},
		{"server error", []fakeFailure{
			{500, "InternalServiceError", "x#InternalServiceFault"}, {500, "InternalServiceError", "x#InternalServiceFault"},
			{500, "InternalServiceError", "x#InternalServiceFault"}, {500, "InternalServiceError", "x#InternalServiceFault"},
		}, 0, "other", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, srv := newFakeCloudWatch(t, filepath.Join("testdata", "get_metric_data.json"))
			cfg := baseConfig(srv.URL)
			cfg.Services = []string{"api"}
			p := newTestPoller(t, cfg, testAPI(srv.URL, nil))
			var slept []time.Duration
			p.sleep = func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return nil }

			// A first good poll, so there are last values to keep.
			if err := p.Poll(context.Background()); err != nil {
				t.Fatal(err)
			}
			fake.mu.Lock()
			fake.failures = tt.failures
			fake.mu.Unlock()
			err := p.Poll(context.Background())
			if (err != nil) != (tt.wantUp == 0) {
				t.Fatalf("Poll err = %v, want up %v", err, tt.wantUp)
			}
			c := NewCollector(p)
			if got := testutil.ToFloat64(filterCollector(c, "envelope_exporter_cloudwatch_up")); got != tt.wantUp {
				t.Errorf("up = %v, want %v", got, tt.wantUp)
			}
			text := string(exposition(t, c))
			wantLine := `envelope_exporter_cloudwatch_errors_total{reason="` + tt.wantReason + `"} ` + strconv.FormatFloat(tt.wantCount, 'f', -1, 64)
			if !strings.Contains(text, wantLine) {
				t.Errorf("missing %q in\n%s", wantLine, text)
			}
			if !strings.Contains(text, `ecs_service_cpu_utilization_ratio{cluster_name="perf",service_name="api",statistic="Maximum"} 0.9375`) {
				t.Errorf("last values not served after failures:\n%s", text)
			}
			// Backoff grows: each delay is within [d/2, d] of base<<attempt.
			for i, d := range slept {
				full := min(DefaultBackoffBase<<i, DefaultBackoffMax)
				if d < full/2 || d > full {
					t.Errorf("backoff %d = %v, want within [%v, %v]", i, d, full/2, full)
				}
			}
			if len(slept) != min(len(tt.failures), DefaultMaxAttempts-1) {
				t.Errorf("slept %d times for %d failures", len(slept), len(tt.failures))
			}
		})
	}
}

// filterCollector keeps one family of c.
func filterCollector(c prometheus.Collector, name string) prometheus.Collector {
	return &filtered{c, name}
}

type filtered struct {
	c    prometheus.Collector
	name string
}

func (f *filtered) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(f, ch)
}

func (f *filtered) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() { f.c.Collect(all); close(all) }()
	for m := range all {
		if strings.Contains(m.Desc().String(), `fqName: "`+f.name+`"`) {
			ch <- m
		}
	}
}

// TestCredentialsProviderFailure: the default chain finding nothing is a
// credentials error, not a crash, and no request is sent.
func TestCredentialsProviderFailure(t *testing.T) {
	fake, srv := newFakeCloudWatch(t, filepath.Join("testdata", "get_metric_data.json"))
	noCreds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no EC2 IMDS role found")
	})
	cfg := baseConfig(srv.URL)
	p := newTestPoller(t, cfg, testAPI(srv.URL, noCreds))
	if err := p.Poll(context.Background()); err == nil {
		t.Fatal("poll succeeded without credentials")
	}
	s := p.snapshot()
	if s.errors["credentials"] != DefaultMaxAttempts {
		t.Errorf("credentials errors = %v, want %d", s.errors["credentials"], DefaultMaxAttempts)
	}
	if len(fake.requests) != 0 {
		t.Errorf("%d requests sent without credentials", len(fake.requests))
	}
}

// TestScrapeNeverBlocks: with CloudWatch hanging, a scrape returns at once
// with up 0 and no values, while the poll is still waiting.
func TestScrapeNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	var logs bytes.Buffer
	p, err := NewPoller(baseConfig(hang.URL), testAPI(hang.URL, nil), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(p))
	mfs, err := reg.Gather() // must not wait for the hanging poll
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "ecs_service_") {
			t.Errorf("%s served before any datapoint", mf.GetName())
		}
		if mf.GetName() == "envelope_exporter_cloudwatch_up" && mf.GetMetric()[0].GetGauge().GetValue() != 0 {
			t.Errorf("up = 1 before a poll")
		}
	}
	cancel()
	<-done
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg     Config
		wantErr string
		enabled bool
	}{
		{Config{}, "", false},
		{Config{Cluster: "c"}, "needs at least one --cloudwatch.service", false},
		{Config{Services: []string{"s"}}, "needs --cloudwatch.cluster", false},
		{Config{Cluster: "c", Services: []string{" "}}, "empty service name", true},
		{Config{Cluster: "c", Services: []string{"s"}}, "", true},
	} {
		err := tt.cfg.Validate()
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%+v: err = %v, want %q", tt.cfg, err, tt.wantErr)
		}
		if tt.cfg.Enabled() != tt.enabled {
			t.Errorf("%+v: Enabled = %v", tt.cfg, tt.cfg.Enabled())
		}
	}
}

func TestClassify(t *testing.T) {
	if got := Classify(errors.New("operation error: failed to retrieve credentials: boom")); got != "credentials" {
		t.Errorf("Classify(credentials) = %s", got)
	}
	if got := Classify(errors.New("dial tcp: connection refused")); got != "other" {
		t.Errorf("Classify(network) = %s", got)
	}
}

// BenchmarkPoll is one background poll of 80 services with Container
// Insights: 1040 queries in 3 GetMetricData calls over the CBOR wire
// protocol, against the local fake.
func BenchmarkPoll(b *testing.B) {
	_, srv := newFakeCloudWatch(b, filepath.Join("testdata", "get_metric_data.json"))
	cfg := baseConfig(srv.URL)
	cfg.Services = make([]string, 80)
	for i := range cfg.Services {
		cfg.Services[i] = "svc" + strconv.Itoa(i)
	}
	p, err := NewPoller(cfg, testAPI(srv.URL, nil), nil)
	if err != nil {
		b.Fatal(err)
	}
	p.now = func() time.Time { return fixedNow }
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Poll(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCollect is a scrape of the last values: what the poller keeps
// off the scrape path.
func BenchmarkCollect(b *testing.B) {
	_, srv := newFakeCloudWatch(b, filepath.Join("testdata", "get_metric_data.json"))
	p, err := NewPoller(baseConfig(srv.URL), testAPI(srv.URL, nil), nil)
	if err != nil {
		b.Fatal(err)
	}
	p.now = func() time.Time { return fixedNow }
	if err := p.Poll(context.Background()); err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(p))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
