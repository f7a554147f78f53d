package exporter

// The exporter's own series and the gatherers of k6 series.

import (
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	dto "github.com/prometheus/client_model/go"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// registerSelfMetrics creates and registers the exporter's own series.
func (s *Server) registerSelfMetrics(limit int) {
	vec := func(d catalogue.Desc) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)
	}
	s.points = vec(catalogue.ExporterPointsIngested)
	s.bad = vec(catalogue.ExporterBadLines)
	s.otlpReqs = vec(catalogue.ExporterOTLPRequests)
	s.lag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: catalogue.ExporterIngestLag.Name, Help: catalogue.ExporterIngestLag.Help}, catalogue.ExporterIngestLag.Labels)
	s.lastTS = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: catalogue.ExporterLastPoint.Name, Help: catalogue.ExporterLastPoint.Help}, catalogue.ExporterLastPoint.Labels)
	s.overflow = vec(catalogue.ExporterSeriesOverflow)
	s.reopens = prometheus.NewCounter(prometheus.CounterOpts{Name: catalogue.ExporterFollowReopens.Name, Help: catalogue.ExporterFollowReopens.Help})
	s.pushErrs = prometheus.NewCounter(prometheus.CounterOpts{Name: catalogue.ExporterOTLPPushErrors.Name, Help: catalogue.ExporterOTLPPushErrors.Help})
	s.starts = prometheus.NewCounter(prometheus.CounterOpts{Name: catalogue.ExporterOTLPStreamStarts.Name, Help: catalogue.ExporterOTLPStreamStarts.Help})
	for _, r := range []string{OverflowSeries, OverflowMetrics, OverflowStreams, OverflowLabelBytes} {
		s.overflow.WithLabelValues(r)
	}
	for _, src := range []string{SourceNDJSON, SourceResults, SourceOTLP, SourceAPI} {
		s.points.WithLabelValues(src) // known in advance: export 0
	}
	for _, o := range otlp.Outcomes() {
		s.otlpReqs.WithLabelValues(o)
	}
	seriesGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: catalogue.ExporterSeries.Name, Help: catalogue.ExporterSeries.Help},
		func() float64 { return float64(s.st.nseries.Load()) })
	limitGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: catalogue.ExporterSeriesLimit.Name, Help: catalogue.ExporterSeriesLimit.Help},
		func() float64 { return float64(limit) })

	s.reg.MustRegister(s.points, s.bad, s.otlpReqs, s.lag, s.lastTS, s.overflow, s.reopens, s.pushErrs, s.starts, seriesGauge, limitGauge,
		explicitStreams{s: s, desc: prometheus.NewDesc(catalogue.ExporterOTLPExplicitStreams.Name, catalogue.ExporterOTLPExplicitStreams.Help,
			catalogue.ExporterOTLPExplicitStreams.Labels, nil)},
		versioncollector.NewCollector("envelope_exporter"))
}

// explicitStreams serves, per k6 metric, the OTLP histogram streams held
// that send explicit buckets (otlp.Receiver.ExplicitBucketStreams).
type explicitStreams struct {
	s    *Server
	desc *prometheus.Desc
}

func (e explicitStreams) Describe(ch chan<- *prometheus.Desc) { ch <- e.desc }

func (e explicitStreams) Collect(ch chan<- prometheus.Metric) {
	if e.s.otlp == nil { // collected before the receiver is built
		return
	}
	for metric, n := range e.s.otlp.ExplicitBucketStreams() {
		ch <- prometheus.MustNewConstMetric(e.desc, prometheus.GaugeValue, float64(n), metric)
	}
}

// k6Collector renders the store; it is unchecked (describes nothing)
// because k6 metrics appear as the test runs.
// PushFailed counts a failed OTLP push (otelpush.Options.OnError).
func (s *Server) PushFailed(error) { s.pushErrs.Inc() }

// Gatherer gathers everything /metrics serves: the registry plus the k6
// series, rendered straight from the store.
func (s *Server) Gatherer() prometheus.Gatherer { return merged{s.reg, s.st} }

// K6Gatherer gathers only the k6 and envelope series (what the OTLP push
// sends).
func (s *Server) K6Gatherer() prometheus.Gatherer { return merged{s.k6Reg, s.st} }

// merged adds the store's families to a registry's, sorted by name; a
// name the registry already has keeps the registry's family.
type merged struct {
	reg *prometheus.Registry
	st  *store
}

func (m merged) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := m.reg.Gather()
	have := make(map[string]bool, len(mfs))
	for _, mf := range mfs {
		have[mf.GetName()] = true
	}
	for _, mf := range m.st.gather() {
		if !have[mf.GetName()] {
			mfs = append(mfs, mf)
		}
	}
	sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
	return mfs, err
}

// ingestLag is envelope_exporter_ingest_lag_seconds' one meaning on every
// input: how long after its k6 timestamp a sample was ingested, taken
// when it arrives (never negative: clocks differ). A source that goes
// quiet keeps the lag of its last sample; silence shows in
// envelope_exporter_last_point_timestamp_seconds instead.
func ingestLag(ingested, sampled time.Time) time.Duration {
	return max(ingested.Sub(sampled), 0)
}
