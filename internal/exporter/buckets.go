package exporter

import (
	"math"
	"slices"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
)

// Default classic bucket upper bounds by k6 value type. Time trends use a
// 1-2.5-5 ladder from 1 ms to 60 s; envelope band edges are added to it.
var (
	DefaultTimeBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	DefaultDataBuckets = []float64{256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	DefaultBuckets     = []float64{1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}
)

// EdgeSeconds converts an envelope latency figure (ms) to the classic
// bucket bound the exporter uses for it: rounded to the microsecond so
// that the `le` label reads as the envelope's own figure ("0.4053" for
// 405.3 ms). Rules that select a band bucket must format this value.
func EdgeSeconds(ms float64) float64 {
	return math.Round(ms*1000) / 1e6
}

// BandEdges are the latency figures (ms) of a band that become bucket
// bounds: min, max, and max raised by the latency tolerance (the alert
// threshold), for the median, p95 and p99 bands.
func BandEdges(bands []envelope.Band, rise float64) []float64 {
	var ms []float64
	for _, b := range bands {
		if b.N == 0 && b.Min == 0 && b.Max == 0 {
			continue
		}
		ms = append(ms, b.Min, b.Max)
		if rise > 0 {
			ms = append(ms, b.Max*(1+rise))
		}
	}
	return ms
}

// ClassicBuckets is the classic bucket layout of a k6 trend: the default
// ladder for its value type plus, for time trends, the envelope's band
// edges that concern it (the overall http_req_duration bands and
// tag-selected endpoint bands for http_req_duration; an endpoint's own
// bands for its custom trend). Every series of a family shares it, so
// `sum by (le)` works across label sets, k6 instances and exporters fed
// the same envelope.
func ClassicBuckets(env *envelope.Envelope, k6Metric string, contains k6.ValueType) []float64 {
	if env == nil {
		return ClassicBucketsAll(nil, k6Metric, contains)
	}
	return ClassicBucketsAll([]*envelope.Envelope{env}, k6Metric, contains)
}

// ClassicBucketsAll is ClassicBuckets for an exporter serving several
// envelopes: the default ladder plus the band edges of every one of them,
// so each envelope's rules find the le their thresholds name.
func ClassicBucketsAll(envs []*envelope.Envelope, k6Metric string, contains k6.ValueType) []float64 {
	var b []float64
	switch contains {
	case k6.Time:
		b = slices.Clone(DefaultTimeBuckets)
	case k6.Data:
		return slices.Clone(DefaultDataBuckets)
	default:
		return slices.Clone(DefaultBuckets)
	}
	var ms []float64
	for _, env := range envs {
		rise := env.Tolerance.LatencyRise
		if k6Metric == "http_req_duration" {
			ms = append(ms, BandEdges([]envelope.Band{env.Latency.Median, env.Latency.P95, env.Latency.P99}, rise)...)
		}
		for _, e := range env.Endpoints {
			if (e.Metric == "" && e.Tag != "" && k6Metric == "http_req_duration") || (e.Metric != "" && e.Metric == k6Metric) {
				ms = append(ms, BandEdges([]envelope.Band{e.Median, e.P95, e.P99}, rise)...)
			}
		}
	}
	for _, v := range ms {
		if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			b = append(b, EdgeSeconds(v))
		}
	}
	slices.Sort(b)
	return slices.Compact(b)
}
