package otelpush

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// client is the SDK exporter that sends each collection as one OTLP/HTTP
// protobuf request. It is written here rather than taken from the
// SDK's otlpmetrichttp package because that package's request type
// brings the gRPC framework with it, and with it most of the binary's
// start-up cost (docs/builds.md). It sends only what Producer makes:
// cumulative sums, gauges and exponential histograms, plus the explicit
// histograms the SDK's own instruments would make. It does not retry:
// the series are cumulative, so the next push carries everything a
// failed one did.
type client struct {
	url  string
	http *http.Client
}

// requestTimeout bounds one push.
const requestTimeout = 10 * time.Second

// newClient sends to endpoint: a URL (path /v1/metrics when it has
// none) or host:port, which is HTTPS unless insecure.
func newClient(endpoint string, insecure bool) (*client, error) {
	raw := endpoint
	if !strings.Contains(endpoint, "://") {
		scheme := "https"
		if insecure {
			scheme = "http"
		}
		raw = scheme + "://" + endpoint
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("endpoint %q: want host:port or an http(s) URL", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/metrics"
	}
	return &client{url: u.String(), http: &http.Client{Timeout: requestTimeout}}, nil
}

func (c *client) Temporality(sdkmetric.InstrumentKind) metricdata.Temporality {
	return metricdata.CumulativeTemporality
}

func (c *client) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (c *client) ForceFlush(context.Context) error { return nil }

func (c *client) Shutdown(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// Export sends rm. A collector that answers with a partial success
// (points it refused) fails the push, so it is counted and logged.
func (c *client) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	msg, err := encodeRequest(rm)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "envelope-exporter")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck // read-only; the status decides
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s: %s", c.url, resp.Status, strings.TrimSpace(string(body)))
	}
	if err != nil {
		return fmt.Errorf("%s: reading the reply: %w", c.url, err)
	}
	if n, text := partialSuccess(body); n > 0 {
		return fmt.Errorf("%s: the collector refused %d data points: %s", c.url, n, text)
	}
	return nil
}

// partialSuccess reads an ExportMetricsServiceResponse's partial_success
// (1): rejected_data_points (1) and error_message (2). An unreadable
// reply counts as full success, as the OTLP specification has clients
// treat one.
func partialSuccess(b []byte) (rejected int64, msg string) {
	ps := field(b, 1, protowire.BytesType)
	if ps == nil {
		return 0, ""
	}
	if v := field(ps, 1, protowire.VarintType); v != nil {
		n, _ := protowire.ConsumeVarint(v)
		rejected = int64(n)
	}
	return rejected, string(field(ps, 2, protowire.BytesType))
}

// field returns the last value of field num of type typ in a protobuf
// message: a varint's bytes, or a length-delimited field's content.
func field(b []byte, num protowire.Number, typ protowire.Type) []byte {
	var out []byte
	for len(b) > 0 {
		n, t, k := protowire.ConsumeTag(b)
		if k < 0 {
			return out
		}
		b = b[k:]
		m := protowire.ConsumeFieldValue(n, t, b)
		if m < 0 {
			return out
		}
		if n == num && t == typ {
			switch t {
			case protowire.BytesType:
				out, _ = protowire.ConsumeBytes(b[:m])
			default:
				out = b[:m]
			}
		}
		b = b[m:]
	}
	return out
}

// encodeRequest encodes rm as an ExportMetricsServiceRequest, whose one
// field is MetricsData's: the same bytes.
func encodeRequest(rm *metricdata.ResourceMetrics) ([]byte, error) {
	// A nil *Resource reads as the empty one.
	out := &metricpb.ResourceMetrics{Resource: &resourcepb.Resource{Attributes: keyValues(*rm.Resource.Set())}, SchemaUrl: rm.Resource.SchemaURL()}
	for _, sm := range rm.ScopeMetrics {
		s := &metricpb.ScopeMetrics{Scope: &commonpb.InstrumentationScope{Name: sm.Scope.Name, Version: sm.Scope.Version}, SchemaUrl: sm.Scope.SchemaURL}
		for _, m := range sm.Metrics {
			pm, err := metric(m)
			if err != nil {
				return nil, err
			}
			s.Metrics = append(s.Metrics, pm)
		}
		out.ScopeMetrics = append(out.ScopeMetrics, s)
	}
	return proto.Marshal(&metricpb.MetricsData{ResourceMetrics: []*metricpb.ResourceMetrics{out}})
}

func metric(m metricdata.Metrics) (*metricpb.Metric, error) {
	out := &metricpb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit}
	switch d := m.Data.(type) {
	case metricdata.Sum[float64]:
		out.Data = &metricpb.Metric_Sum{Sum: &metricpb.Sum{DataPoints: numbers(d.DataPoints), AggregationTemporality: temporality(d.Temporality), IsMonotonic: d.IsMonotonic}}
	case metricdata.Sum[int64]:
		out.Data = &metricpb.Metric_Sum{Sum: &metricpb.Sum{DataPoints: numbers(d.DataPoints), AggregationTemporality: temporality(d.Temporality), IsMonotonic: d.IsMonotonic}}
	case metricdata.Gauge[float64]:
		out.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numbers(d.DataPoints)}}
	case metricdata.Gauge[int64]:
		out.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numbers(d.DataPoints)}}
	case metricdata.Histogram[float64]:
		h := &metricpb.Histogram{AggregationTemporality: temporality(d.Temporality)}
		for _, p := range d.DataPoints {
			hp := &metricpb.HistogramDataPoint{Attributes: keyValues(p.Attributes), StartTimeUnixNano: nanos(p.StartTime), TimeUnixNano: nanos(p.Time),
				Count: p.Count, Sum: &p.Sum, BucketCounts: p.BucketCounts, ExplicitBounds: p.Bounds}
			hp.Min, hp.Max = extremum(p.Min), extremum(p.Max)
			h.DataPoints = append(h.DataPoints, hp)
		}
		out.Data = &metricpb.Metric_Histogram{Histogram: h}
	case metricdata.ExponentialHistogram[float64]:
		h := &metricpb.ExponentialHistogram{AggregationTemporality: temporality(d.Temporality)}
		for _, p := range d.DataPoints {
			hp := &metricpb.ExponentialHistogramDataPoint{Attributes: keyValues(p.Attributes), StartTimeUnixNano: nanos(p.StartTime), TimeUnixNano: nanos(p.Time),
				Count: p.Count, Sum: &p.Sum, Scale: p.Scale, ZeroCount: p.ZeroCount, ZeroThreshold: p.ZeroThreshold,
				Positive: &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: p.PositiveBucket.Offset, BucketCounts: p.PositiveBucket.Counts},
				Negative: &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: p.NegativeBucket.Offset, BucketCounts: p.NegativeBucket.Counts}}
			hp.Min, hp.Max = extremum(p.Min), extremum(p.Max)
			h.DataPoints = append(h.DataPoints, hp)
		}
		out.Data = &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: h}
	default:
		return nil, fmt.Errorf("metric %s: %T is not pushed", m.Name, m.Data)
	}
	return out, nil
}

// extremum is a histogram's min or max as OTLP's optional field: nil
// when unset.
func extremum(e metricdata.Extrema[float64]) *float64 {
	if v, ok := e.Value(); ok {
		return &v
	}
	return nil
}

func numbers[N int64 | float64](dps []metricdata.DataPoint[N]) []*metricpb.NumberDataPoint {
	out := make([]*metricpb.NumberDataPoint, 0, len(dps))
	for _, p := range dps {
		np := &metricpb.NumberDataPoint{Attributes: keyValues(p.Attributes), StartTimeUnixNano: nanos(p.StartTime), TimeUnixNano: nanos(p.Time)}
		switch v := any(p.Value).(type) {
		case int64:
			np.Value = &metricpb.NumberDataPoint_AsInt{AsInt: v}
		case float64:
			np.Value = &metricpb.NumberDataPoint_AsDouble{AsDouble: v}
		}
		out = append(out, np)
	}
	return out
}

func temporality(t metricdata.Temporality) metricpb.AggregationTemporality {
	if t == metricdata.DeltaTemporality {
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	}
	return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
}

// nanos is t in Unix nanoseconds, 0 for the zero time (unset).
func nanos(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func keyValues(set attribute.Set) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, set.Len())
	for it := set.Iter(); it.Next(); {
		kv := it.Attribute()
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	}
	// Slices, which no pushed series carries, as their text.
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}
