package otlp

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/otlp/otlptest"
)

// captureBodies reads a capture's export request bodies (gRPC bodies
// without their 5-byte message prefix).
func captureBodies(t *testing.T, pattern string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, p := range fixtures.Glob(t, pattern) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(p, "grpc-") {
			b = b[5:]
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		t.Fatalf("no capture %s", pattern)
	}
	return out
}

// explicitIdentities reads the bodies as a test would by hand: every
// explicit-bucket histogram data point's metric (k6 name) and attributes,
// with its number of bounds.
func explicitIdentities(t *testing.T, bodies [][]byte) map[string]int {
	t.Helper()
	out := map[string]int{}
	otlptest.EachMetric(t, bodies, func(m *metricpb.Metric) {
		for _, dp := range m.GetHistogram().GetDataPoints() {
			tags, _ := tagsOf(dp.GetAttributes())
			out[identityString(strings.TrimPrefix(m.GetName(), "k6_"), tags)] = len(dp.GetExplicitBounds())
		}
	})
	return out
}

func identityString(metric string, tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(metric)
	for _, k := range keys {
		fmt.Fprintf(&b, ",%s=%s", k, tags[k])
	}
	return b.String()
}

// k6's default OTLP histograms (the real OTLP/HTTP capture, explicit
// buckets) are reported once per stream identity, however many exports
// and retries carry it, with k6's 15 bounds and their widest bucket, and
// counted per metric; the exponential capture (OTLP/gRPC) reports none.
func TestExplicitBucketsReportedOncePerStream(t *testing.T) {
	for _, c := range []struct {
		name, pattern string
		explicit      bool
	}{
		{"explicit", "k6/baseline-mix-v2.2.0/otlp-sample-otlp/otlp-*.bin", true},
		{"exponential", "k6/baseline-mix-v2.2.0/otlp-grpc-exponential-otlp/grpc-*.bin", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			bodies := captureBodies(t, c.pattern)
			want := explicitIdentities(t, bodies)
			if c.explicit != (len(want) > 0) {
				t.Fatalf("capture %s: %d explicit-bucket identities, want some: %v", c.pattern, len(want), c.explicit)
			}
			reported := map[string]int{}
			var got []ExplicitBuckets
			rc := NewReceiver(newSumSink(), Options{Prefix: "k6_", OnExplicitBuckets: func(e ExplicitBuckets) {
				reported[identityString(e.Metric, e.Tags)]++
				got = append(got, e)
			}})
			for _, b := range bodies {
				for range 2 { // a retry
					if rec := post(t, rc, "application/x-protobuf", "", b); rec.Code != http.StatusOK {
						t.Fatalf("status %d: %s", rec.Code, rec.Body)
					}
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d reports, want one per explicit-bucket identity: %d", len(got), len(want))
			}
			perMetric := map[string]int{}
			for id, bounds := range want {
				if reported[id] != 1 {
					t.Errorf("%s reported %d times, want once", id, reported[id])
				}
				perMetric[strings.SplitN(id, ",", 2)[0]]++
				if bounds != 15 {
					t.Errorf("%s: %d bounds in the capture, want k6's default 15", id, bounds)
				}
			}
			for _, e := range got {
				if e.Bounds != want[identityString(e.Metric, e.Tags)] || e.WidestLow != 1000 || e.WidestHigh != 2500 || e.Unit != "ms" {
					t.Errorf("%s: bounds %d, widest %v–%v %s; want %d, 1000–2500 ms", e.Metric, e.Bounds, e.WidestLow, e.WidestHigh, e.Unit, want[identityString(e.Metric, e.Tags)])
				}
			}
			if held := rc.ExplicitBucketStreams(); !mapsEqual(held, perMetric) {
				t.Errorf("ExplicitBucketStreams() = %v, want %v", held, perMetric)
			}
			// Streams not seen since are forgotten with the cumulative state.
			rc.Expire(time.Now().Add(time.Hour))
			if held := rc.ExplicitBucketStreams(); len(held) != 0 {
				t.Errorf("after Expire: %v, want none", held)
			}
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestWidestBucket(t *testing.T) {
	for _, c := range []struct {
		bounds    []float64
		low, high float64
	}{
		{[]float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000}, 1000, 2500},
		{[]float64{0, 1}, 0, 0},
		{nil, 0, 0},
		{[]float64{1, 2, 3}, 1, 2},
	} {
		if l, h := widestBucket(c.bounds); l != c.low || h != c.high {
			t.Errorf("widestBucket(%v) = %v, %v; want %v, %v", c.bounds, l, h, c.low, c.high)
		}
	}
}
