package otlp

// Histogram resolution: k6's OTLP output sends Trends as explicit-bucket
// histograms unless told otherwise, and quantiles from those 15 bounds
// are coarse (a p95 lands anywhere in a bucket such as 1000–2500 ms).
// The receiver notes each stream identity that sends explicit buckets,
// tells Options.OnExplicitBuckets once per identity, and keeps a count
// per metric for a series the dashboards show.

import (
	"math"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/envelope-dev/envelope/internal/k6"
)

// The OTel SDK setting that makes k6 send exponential histograms, whose
// quantiles are within one bucket width (0.3% at scale 8) of the truth.
const (
	HistogramAggregationEnv = "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION"
	ExponentialAggregation  = "base2_exponential_bucket_histogram"
	// ExponentialSetting is the environment assignment to give k6.
	ExponentialSetting = HistogramAggregationEnv + "=" + ExponentialAggregation
)

// ExplicitBuckets describes a histogram stream identity that sends
// explicit buckets.
type ExplicitBuckets struct {
	Metric string            // k6 metric name
	Tags   map[string]string // the data points' attributes
	Bounds int               // explicit bounds (k6's default: 15)
	// WidestLow and WidestHigh are the finite bucket above zero widest
	// relative to its lower bound, in the metric's unit (k6's default:
	// 1000–2500 ms, also 10–25 and 100–250): a quantile inside it is
	// known only to that range. Both 0 when there is no such bucket.
	WidestLow, WidestHigh float64
	Unit                  string // of WidestLow and WidestHigh: "ms" for time, "B" for data, else ""
}

// explicitStream is an identity noted as sending explicit buckets.
type explicitStream struct {
	metric string // k6 metric name, the key of Receiver.explicitBy
	seen   int64  // last point, Receiver.clock (Expire)
}

// explicitLimit bounds the identities noted: the stream limit, or its
// default when streams are unlimited.
func (rc *Receiver) explicitLimit() int {
	if rc.opts.StreamLimit > 0 {
		return rc.opts.StreamLimit
	}
	return DefaultStreamLimit
}

// noteExplicit notes an explicit-bucket point of the metric's identity
// with attrs; the identity's first point is reported to
// OnExplicitBuckets. Past explicitLimit identities, new ones are neither
// reported nor counted.
func (x *metricIn) noteExplicit(attrs []*commonpb.KeyValue, bounds []float64) {
	rc := x.rc
	ident := rc.identityKey(x.resKey, x.m.GetName(), attrs)
	if e := rc.explicit[ident]; e != nil {
		e.seen = rc.clock
		return
	}
	if len(rc.explicit) >= rc.explicitLimit() {
		return
	}
	rc.explicit[ident] = &explicitStream{metric: x.name, seen: rc.clock}
	rc.explicitBy[x.name]++
	tags, _ := tagsOf(attrs)
	low, high := widestBucket(bounds)
	rc.opts.OnExplicitBuckets(ExplicitBuckets{Metric: x.name, Tags: tags, Bounds: len(bounds),
		WidestLow: low * x.unitScale, WidestHigh: high * x.unitScale, Unit: k6Unit(x.cont)})
}

// k6Unit is the unit of a k6 value of type cont as the receiver hands
// it over: time in ms, data in bytes.
func k6Unit(cont k6.ValueType) string {
	switch cont {
	case k6.Time:
		return "ms"
	case k6.Data:
		return "B"
	}
	return ""
}

// widestBucket is the finite bucket (low, high] with low > 0 whose width
// relative to low is the largest (of equals, the highest); 0, 0 when
// there is none.
func widestBucket(bounds []float64) (low, high float64) {
	worst := 0.0
	for i := 1; i < len(bounds); i++ {
		l, h := bounds[i-1], bounds[i]
		if l <= 0 || math.IsInf(h, 0) {
			continue
		}
		if r := (h - l) / l; r >= worst {
			worst, low, high = r, l, h
		}
	}
	return low, high
}

// expireExplicit forgets the identities noted without a point since
// before (Receiver.clock units).
func (rc *Receiver) expireExplicit(before int64) {
	for k, e := range rc.explicit {
		if e.seen < before {
			delete(rc.explicit, k)
			if rc.explicitBy[e.metric]--; rc.explicitBy[e.metric] <= 0 {
				delete(rc.explicitBy, e.metric)
			}
		}
	}
}

// ExplicitBucketStreams returns, per k6 metric, the histogram stream
// identities held that send explicit buckets (quantiles as coarse as
// their bounds); metrics without any are absent. A fresh map each call.
func (rc *Receiver) ExplicitBucketStreams() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]int, len(rc.explicitBy))
	for m, n := range rc.explicitBy {
		out[m] = n
	}
	return out
}

// K6Env is the environment that points k6's OpenTelemetry output at a
// receiver on addr (host:port) without TLS, over OTLP/gRPC (k6's default
// protocol) or OTLP/HTTP, with exponential histograms.
func K6Env(grpc bool, addr string) []string {
	if grpc {
		return []string{"K6_OTEL_EXPORTER_PROTOCOL=grpc", "K6_OTEL_GRPC_EXPORTER_ENDPOINT=" + addr,
			"K6_OTEL_GRPC_EXPORTER_INSECURE=true", ExponentialSetting}
	}
	return []string{"K6_OTEL_EXPORTER_PROTOCOL=http/protobuf", "K6_OTEL_HTTP_EXPORTER_ENDPOINT=" + addr,
		"K6_OTEL_HTTP_EXPORTER_INSECURE=true", ExponentialSetting}
}

// K6Command is the shell command running script with k6's OpenTelemetry
// output pushing to addr, as K6Env says.
func K6Command(grpc bool, addr, script string) string {
	return strings.Join(K6Env(grpc, addr), " ") + " k6 run --out opentelemetry " + script
}
