package exporter

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/otlp"
	"github.com/envelope-dev/envelope/internal/otlp/otlptest"
)

// explicitStreamsByMetric reads the captured requests by hand: the
// explicit-bucket histogram streams (metric and attributes) of each k6
// metric.
func explicitStreamsByMetric(t *testing.T, bodies [][]byte) map[string]int {
	t.Helper()
	streams := map[string]map[string]bool{}
	otlptest.EachMetric(t, bodies, func(m *metricpb.Metric) {
		name := strings.TrimPrefix(m.GetName(), "k6_")
		for _, dp := range m.GetHistogram().GetDataPoints() {
			if streams[name] == nil {
				streams[name] = map[string]bool{}
			}
			streams[name][protoString(t, dp.GetAttributes())] = true
		}
	})
	out := map[string]int{}
	for name, s := range streams {
		out[name] = len(s)
	}
	return out
}

func protoString(t *testing.T, attrs any) string {
	t.Helper()
	b, err := json.Marshal(attrs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The real captures of k6's OTLP pushes, replayed into the exporter over
// both transports with a call repeated: k6's default explicit buckets
// give one warning per stream (not per request), naming the metric, the
// bounds and the k6 setting for exponential buckets, and the series
// counts those streams per metric; the exponential capture gives neither.
func TestExplicitBucketWarningOncePerStream(t *testing.T) {
	for _, c := range []struct {
		name, capture string
		explicit      bool
	}{
		{"explicit", httpCapture, true},
		{"exponential", grpcCapture, false},
	} {
		bodies := captureBodies(t, c.capture)
		want := explicitStreamsByMetric(t, bodies)
		if c.explicit != (len(want) > 0) {
			t.Fatalf("%s: explicit-bucket streams %v, want some: %v", c.capture, want, c.explicit)
		}
		wantStreams := 0
		for _, n := range want {
			wantStreams += n
		}
		for tr, send := range transports {
			t.Run(c.name+"/"+tr, func(t *testing.T) {
				var logs syncBuffer
				s, err := New(Config{DisableExporterMetrics: true, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
				if err != nil {
					t.Fatal(err)
				}
				send(t, s, bodies, replayOrders(len(bodies))["repeated"])
				warnings := 0
				for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
					if line == "" {
						continue
					}
					var rec struct {
						Level, Msg, Metric string
						Bounds             int
					}
					if err := json.Unmarshal([]byte(line), &rec); err != nil {
						t.Fatalf("log line %q: %v", line, err)
					}
					if !strings.Contains(rec.Msg, "explicit buckets") {
						continue
					}
					warnings++
					if rec.Level != "WARN" || rec.Bounds != 15 || want[rec.Metric] == 0 || !strings.Contains(rec.Msg, otlp.ExponentialSetting) {
						t.Errorf("warning %s: want WARN, a metric of the capture, k6's 15 bounds and %s", line, otlp.ExponentialSetting)
					}
				}
				if warnings != wantStreams {
					t.Errorf("%d warnings, want one per explicit-bucket stream: %d", warnings, wantStreams)
				}
				got := map[string]int{}
				if mf := gatherFamily(t, s, catalogue.ExporterOTLPExplicitStreams.Name); mf != nil {
					for _, m := range mf.GetMetric() {
						got[m.GetLabel()[0].GetValue()] = int(m.GetGauge().GetValue())
					}
				}
				if len(got) != len(want) {
					t.Errorf("%s = %v, want %v", catalogue.ExporterOTLPExplicitStreams.Name, got, want)
				}
				for name, n := range want {
					if got[name] != n {
						t.Errorf("%s{metric=%q} = %d, want %d", catalogue.ExporterOTLPExplicitStreams.Name, name, got[name], n)
					}
				}
			})
		}
	}
}

// envelope_exporter_ingest_lag_seconds means one thing on every input:
// how long after its k6 timestamp the newest sample was ingested, set as
// it arrives. A followed real k6 file left idle, and an OTLP sender gone
// quiet, keep the lag of their last ingestion instead of growing.
func TestIngestLagKeptWhileIdle(t *testing.T) {
	ndjson := fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")
	newestNDJSON := newestPointTime(t, ndjson)
	for _, c := range []struct {
		name   string
		src    string
		newest time.Time
		feed   func(t *testing.T, s *Server)
	}{
		{"followed file", SourceNDJSON, newestNDJSON, func(t *testing.T, s *Server) {
			path := filepath.Join(t.TempDir(), "live.ndjson")
			b, err := os.ReadFile(ndjson)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Follow(ctx, path) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			})
			deadline := time.Now().Add(10 * time.Second)
			for testutil.ToFloat64(s.lastTS.WithLabelValues(SourceNDJSON)) != float64(newestNDJSON.UnixNano())/1e9 {
				if time.Now().After(deadline) {
					t.Fatal("the followed file's newest point was never ingested")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}},
		{"otlp", SourceOTLP, newestOTLPTime(t, captureBodies(t, httpCapture)), func(t *testing.T, s *Server) {
			postCapture(t, s, captureBodies(t, httpCapture), replayOrders(5)["in_order"])
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(Config{DisableExporterMetrics: true, FollowPoll: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			// The exporter's clock at ingestion: a fixed instant, so the
			// lag it sets is known exactly.
			ingested := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			s.st.now = func() time.Time { return ingested }
			c.feed(t, s)
			want := ingested.Sub(c.newest).Seconds()
			lag := func() float64 { return testutil.ToFloat64(s.lag.WithLabelValues(c.src)) }
			if d := lag() - want; d > 1e-3 || d < -1e-3 {
				t.Fatalf("lag %v s after ingestion, want %v (ingestion time minus the newest sample's)", lag(), want)
			}
			// Idle past two of the follower's one-second flushes.
			time.Sleep(2500 * time.Millisecond)
			if d := lag() - want; d > 1e-3 || d < -1e-3 {
				t.Errorf("lag %v s after 2.5 s idle, want %v kept from the last ingestion", lag(), want)
			}
		})
	}
}

// newestPointTime is the newest sample time of a k6 NDJSON file.
func newestPointTime(t *testing.T, path string) time.Time {
	t.Helper()
	in, err := k6.OpenInput(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close() //nolint:errcheck // only read
	var newest time.Time
	r := k6.PointReader{Name: path, MaxLine: 64 << 10, OnPoint: func(p *k6.Point) error {
		if p.Time.After(newest) {
			newest = p.Time
		}
		return nil
	}}
	if err := r.Read(in); err != nil {
		t.Fatal(err)
	}
	if newest.IsZero() {
		t.Fatalf("%s: no points", path)
	}
	return newest
}

// newestOTLPTime is the newest data point time of export requests.
func newestOTLPTime(t *testing.T, bodies [][]byte) time.Time {
	t.Helper()
	var newest uint64
	otlptest.EachMetric(t, bodies, func(m *metricpb.Metric) {
		for _, dp := range m.GetHistogram().GetDataPoints() {
			newest = max(newest, dp.GetTimeUnixNano())
		}
		for _, dp := range m.GetSum().GetDataPoints() {
			newest = max(newest, dp.GetTimeUnixNano())
		}
		for _, dp := range m.GetGauge().GetDataPoints() {
			newest = max(newest, dp.GetTimeUnixNano())
		}
	})
	if newest == 0 {
		t.Fatal("no data points")
	}
	return time.Unix(0, int64(newest))
}
