package envelope

import (
	"math"
	"slices"
	"sort"

	"github.com/envelope-dev/envelope/internal/k6"
)

// Seconds converts an envelope latency figure (ms) to a classic bucket
// bound: seconds rounded to the microsecond, so that the `le` label reads
// as the envelope's own figure ("0.4053" for 405.3 ms).
func Seconds(ms float64) float64 {
	return math.Round(ms*1000) / 1e6
}

// Threshold is a band's latency alert threshold in seconds: its max
// raised by the latency tolerance, as a classic bucket bound (Seconds),
// never below 1 µs. The alert rules select the bucket at this bound and
// the exporter serves it (BucketEdges): both call this function.
func Threshold(b Band, rise float64) float64 {
	return max(Seconds(b.Max*(1+rise)), 1e-6)
}

// Trend is the k6 trend metric the endpoint's bands are measured on: its
// custom trend, or http_req_duration for a tag value of it; "" when the
// endpoint names neither (the rules refuse such an endpoint).
func (e Endpoint) Trend() string {
	switch {
	case e.Metric != "":
		return e.Metric
	case e.Tag != "" && e.Value != "":
		return k6.HTTPReqDuration
	}
	return ""
}

// LatencyBand is one latency band of an envelope and what it is measured
// on.
type LatencyBand struct {
	Trend      string // k6 trend metric (Endpoint.Trend)
	Endpoint   string // envelope key; "" for the overall band
	Percentile string // "50", "95" or "99"
	Band       Band   // ms
}

// LatencyBands lists the envelope's median, p95 and p99 bands, overall
// first, then by endpoint key, each in that order; bands without a max
// and endpoints that name no trend are left out.
func (env *Envelope) LatencyBands() []LatencyBand {
	var out []LatencyBand
	add := func(trend, key string, med, p95, p99 Band) {
		for _, b := range []LatencyBand{{Percentile: "50", Band: med}, {Percentile: "95", Band: p95}, {Percentile: "99", Band: p99}} {
			if b.Band.Max > 0 {
				b.Trend, b.Endpoint = trend, key
				out = append(out, b)
			}
		}
	}
	add(k6.HTTPReqDuration, "", env.Latency.Median, env.Latency.P95, env.Latency.P99)
	keys := make([]string, 0, len(env.Endpoints))
	for k := range env.Endpoints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ep := env.Endpoints[k]
		if t := ep.Trend(); t != "" {
			add(t, k, ep.Median, ep.P95, ep.P99)
		}
	}
	return out
}

// BucketEdges are the classic bucket bounds (seconds) the envelope adds
// to the histogram of a k6 trend: the min, max and Threshold of each of
// its LatencyBands measured on that trend, sorted, without repeats. The
// exporter serves them so that every `le` a generated alert selects
// exists, and dashboards read the band edges exactly.
func (env *Envelope) BucketEdges(trend string) []float64 {
	var out []float64
	rise := env.Tolerance.LatencyRise
	for _, b := range env.LatencyBands() {
		if b.Trend != trend {
			continue
		}
		for _, v := range []float64{Seconds(b.Band.Min), Seconds(b.Band.Max), Threshold(b.Band, rise)} {
			if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
