// Package otelpush pushes the exporter's k6 and envelope series to an
// OpenTelemetry collector over OTLP/HTTP with the OTel Go SDK (its
// periodic reader and producer interface, and a small exporter of its
// own, client.go), for pipelines that are OTLP end to end.
//
// The series are read from a Prometheus gatherer at each push and
// translated without re-aggregation: counters become cumulative monotonic
// Sums (start time = the series' created timestamp), gauges Gauges, and
// histograms cumulative exponential histograms with the native buckets'
// resolution (Prometheus schema n is OTel scale n; Prometheus bucket i is
// OTel bucket i-1). Names and units stay the Prometheus ones, so a
// collector writing to Prometheus yields the same series.
package otelpush

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// Options configure the push.
type Options struct {
	Endpoint string        // host:port, or an http(s) URL (path defaults to /v1/metrics)
	Interval time.Duration // 0 = 15 s
	Insecure bool          // plain HTTP for host:port endpoints
	Logger   *slog.Logger
	OnError  func(error) // each failed push
}

// Producer translates a gatherer's families into OTel metric data.
type Producer struct {
	G   prometheus.Gatherer
	Now func() time.Time
}

// Produce implements sdkmetric.Producer.
func (p *Producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	mfs, err := p.G.Gather()
	if err != nil && len(mfs) == 0 {
		return nil, err
	}
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	sm := metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: "github.com/envelope-dev/envelope/internal/otelpush"}}
	for _, mf := range mfs {
		if m, ok := translate(mf, now); ok {
			sm.Metrics = append(sm.Metrics, m)
		}
	}
	return []metricdata.ScopeMetrics{sm}, nil
}

func unitOf(name string) string {
	switch {
	case strings.HasSuffix(name, "_seconds"), strings.HasSuffix(name, "_seconds_total"):
		return "s"
	case strings.HasSuffix(name, "_bytes"), strings.HasSuffix(name, "_bytes_total"):
		return "By"
	case strings.HasSuffix(name, "_ratio"):
		return "1"
	}
	return ""
}

func attrs(m *dto.Metric) attribute.Set {
	kv := make([]attribute.KeyValue, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		if l.GetValue() != "" {
			kv = append(kv, attribute.String(l.GetName(), l.GetValue()))
		}
	}
	return attribute.NewSet(kv...)
}

func start(ts interface{ AsTime() time.Time }, valid bool, now time.Time) time.Time {
	if valid {
		return ts.AsTime()
	}
	return now
}

func translate(mf *dto.MetricFamily, now time.Time) (metricdata.Metrics, bool) {
	out := metricdata.Metrics{Name: mf.GetName(), Description: mf.GetHelp(), Unit: unitOf(mf.GetName())}
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		sum := metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}
		for _, m := range mf.GetMetric() {
			c := m.GetCounter()
			sum.DataPoints = append(sum.DataPoints, metricdata.DataPoint[float64]{
				Attributes: attrs(m), StartTime: start(c.GetCreatedTimestamp(), c.GetCreatedTimestamp() != nil, now), Time: now, Value: c.GetValue()})
		}
		out.Data = sum
	case dto.MetricType_GAUGE:
		g := metricdata.Gauge[float64]{}
		for _, m := range mf.GetMetric() {
			g.DataPoints = append(g.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs(m), Time: now, Value: m.GetGauge().GetValue()})
		}
		out.Data = g
	case dto.MetricType_HISTOGRAM:
		h := metricdata.ExponentialHistogram[float64]{Temporality: metricdata.CumulativeTemporality}
		for _, m := range mf.GetMetric() {
			dh := m.GetHistogram()
			if dh.Schema == nil {
				continue // classic only: not produced by the exporter's k6 series
			}
			h.DataPoints = append(h.DataPoints, metricdata.ExponentialHistogramDataPoint[float64]{
				Attributes: attrs(m), StartTime: start(dh.GetCreatedTimestamp(), dh.GetCreatedTimestamp() != nil, now), Time: now,
				Count: dh.GetSampleCount(), Sum: dh.GetSampleSum(), Scale: dh.GetSchema(),
				ZeroCount: dh.GetZeroCount(), ZeroThreshold: dh.GetZeroThreshold(),
				PositiveBucket: dense(dh.GetPositiveSpan(), dh.GetPositiveDelta()),
				NegativeBucket: dense(dh.GetNegativeSpan(), dh.GetNegativeDelta()),
			})
		}
		if len(h.DataPoints) == 0 {
			return out, false
		}
		out.Data = h
	default:
		return out, false
	}
	return out, true
}

// dense turns Prometheus spans and deltas into an OTel bucket run.
func dense(spans []*dto.BucketSpan, deltas []int64) metricdata.ExponentialBucket {
	if len(spans) == 0 {
		return metricdata.ExponentialBucket{}
	}
	first := spans[0].GetOffset()
	var counts []uint64
	idx := first
	var cur int64
	d := 0
	for si, sp := range spans {
		if si > 0 {
			for k := int32(0); k < sp.GetOffset(); k++ {
				counts = append(counts, 0)
			}
			idx += sp.GetOffset()
		}
		for k := uint32(0); k < sp.GetLength(); k++ {
			cur += deltas[d]
			d++
			counts = append(counts, uint64(cur))
			idx++
		}
	}
	// Prometheus bucket i is (γ^(i-1), γ^i]; OTel bucket i is (γ^i, γ^(i+1)].
	return metricdata.ExponentialBucket{Offset: first - 1, Counts: counts}
}

// Run pushes every Interval until ctx ends, then pushes once more.
func Run(ctx context.Context, g prometheus.Gatherer, opts Options) error {
	if opts.Endpoint == "" {
		return errors.New("otlp push: no endpoint")
	}
	if opts.Interval <= 0 {
		opts.Interval = 15 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	exp, err := newClient(opts.Endpoint, opts.Insecure)
	if err != nil {
		return fmt.Errorf("otlp push: %w", err)
	}
	reader := sdkmetric.NewPeriodicReader(&reporting{Exporter: exp, opts: opts},
		sdkmetric.WithInterval(opts.Interval), sdkmetric.WithProducer(&Producer{G: g}))
	res := resource.NewSchemaless(semconv.ServiceName("envelope-exporter"))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	opts.Logger.Info("pushing series over OTLP", "endpoint", opts.Endpoint, "interval", opts.Interval)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return mp.Shutdown(sctx)
}

// reporting counts and logs failed exports.
type reporting struct {
	sdkmetric.Exporter
	opts Options
}

func (r *reporting) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := r.Exporter.Export(ctx, rm)
	if err != nil {
		r.opts.Logger.Warn("OTLP push failed", "endpoint", r.opts.Endpoint, "err", err)
		if r.opts.OnError != nil {
			r.opts.OnError(err)
		}
	}
	return err
}
