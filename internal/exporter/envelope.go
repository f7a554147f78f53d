package exporter

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
)

func desc(d catalogue.Desc) *prometheus.Desc {
	return prometheus.NewDesc(d.Name, d.Help, d.Labels, nil)
}

// envelopeCollector exposes an envelope's figures as constant gauges.
type envelopeCollector struct {
	envs  []*envelope.Envelope
	descs map[string]*prometheus.Desc
}

// envelopes lists Envelope and Envelopes, refusing two of one name: their
// gauges and rules would be indistinguishable.
func (cfg Config) envelopes() ([]*envelope.Envelope, error) {
	var out []*envelope.Envelope
	if cfg.Envelope != nil {
		out = append(out, cfg.Envelope)
	}
	for _, e := range cfg.Envelopes {
		if e != nil {
			out = append(out, e)
		}
	}
	seen := map[string]bool{}
	for _, e := range out {
		if seen[e.Name] {
			return nil, fmt.Errorf("two envelopes are named %q: each envelope's gauges and rules are told apart by its name", e.Name)
		}
		seen[e.Name] = true
	}
	return out, nil
}

func newEnvelopeCollector(envs []*envelope.Envelope) *envelopeCollector {
	c := &envelopeCollector{envs: envs, descs: map[string]*prometheus.Desc{}}
	for _, d := range []catalogue.Desc{catalogue.EnvelopeInfo, catalogue.EnvelopeThroughputMin, catalogue.EnvelopeThroughputMax,
		catalogue.EnvelopeThroughputMean, catalogue.EnvelopeThroughputFloor, catalogue.EnvelopeIterationsMin,
		catalogue.EnvelopeIterationsMax, catalogue.EnvelopeThroughputCV, catalogue.EnvelopeThroughputCVMax,
		catalogue.EnvelopeLatencyMin, catalogue.EnvelopeLatencyMax, catalogue.EnvelopeLatencyThreshold,
		catalogue.EnvelopeErrorRatio, catalogue.EnvelopeErrorBudget, catalogue.EnvelopeEndpointShare} {
		c.descs[d.Name] = desc(d)
	}
	return c
}

func (c *envelopeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *envelopeCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.envs {
		c.collect(ch, e)
	}
}

func (c *envelopeCollector) collect(ch chan<- prometheus.Metric, e *envelope.Envelope) {
	name := e.Name
	g := func(d catalogue.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[d.Name], prometheus.GaugeValue, v, labels...)
	}
	g(catalogue.EnvelopeInfo, 1, name, strconv.Itoa(len(e.Runs)), e.Tolerance.Window)
	g(catalogue.EnvelopeThroughputMin, e.Throughput.Min, name)
	g(catalogue.EnvelopeThroughputMax, e.Throughput.Max, name)
	g(catalogue.EnvelopeThroughputMean, e.Throughput.Mean, name)
	g(catalogue.EnvelopeThroughputFloor, e.Throughput.Min*(1-e.Tolerance.ThroughputDrop), name)
	g(catalogue.EnvelopeIterationsMin, e.Iterations.Min, name)
	g(catalogue.EnvelopeIterationsMax, e.Iterations.Max, name)
	g(catalogue.EnvelopeThroughputCV, e.Throughput.CV, name)
	if e.Tolerance.MaxCV > 0 {
		g(catalogue.EnvelopeThroughputCVMax, e.Tolerance.MaxCV, name)
	}
	g(catalogue.EnvelopeErrorRatio, e.Errors.Rate, name)
	g(catalogue.EnvelopeErrorBudget, e.Tolerance.ErrorRatio, name)

	rise := e.Tolerance.LatencyRise
	for _, b := range e.LatencyBands() {
		ep := e.Endpoints[b.Endpoint]
		metric := catalogue.SeriesName(b.Trend, "trend", "time")
		g(catalogue.EnvelopeLatencyMin, envelope.Seconds(b.Band.Min), name, metric, b.Endpoint, ep.Tag, ep.Value, b.Percentile)
		g(catalogue.EnvelopeLatencyMax, envelope.Seconds(b.Band.Max), name, metric, b.Endpoint, ep.Tag, ep.Value, b.Percentile)
		g(catalogue.EnvelopeLatencyThreshold, envelope.Threshold(b.Band, rise), name, metric, b.Endpoint, ep.Tag, ep.Value, b.Percentile)
	}
	keys := make([]string, 0, len(e.Endpoints))
	for k := range e.Endpoints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ep := e.Endpoints[k]
		if t := ep.Trend(); t != "" && ep.Share > 0 {
			g(catalogue.EnvelopeEndpointShare, ep.Share, name, catalogue.SeriesName(t, "trend", "time"), k, ep.Tag, ep.Value)
		}
	}
}
