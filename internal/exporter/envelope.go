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
	bands := func(metric, endpoint, tag, value string, med, p95, p99 envelope.Band) {
		for _, b := range []struct {
			pct  string
			band envelope.Band
		}{{"50", med}, {"95", p95}, {"99", p99}} {
			if b.band.N == 0 && b.band.Max == 0 {
				continue
			}
			g(catalogue.EnvelopeLatencyMin, EdgeSeconds(b.band.Min), name, metric, endpoint, tag, value, b.pct)
			g(catalogue.EnvelopeLatencyMax, EdgeSeconds(b.band.Max), name, metric, endpoint, tag, value, b.pct)
			g(catalogue.EnvelopeLatencyThreshold, EdgeSeconds(b.band.Max*(1+rise)), name, metric, endpoint, tag, value, b.pct)
		}
	}
	dur := catalogue.HTTPReqDuration.Name
	bands(dur, "", "", "", e.Latency.Median, e.Latency.P95, e.Latency.P99)
	keys := make([]string, 0, len(e.Endpoints))
	for k := range e.Endpoints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ep := e.Endpoints[k]
		metric := dur
		if ep.Metric != "" {
			metric = catalogue.SeriesName(ep.Metric, "trend", "time")
		}
		bands(metric, k, ep.Tag, ep.Value, ep.Median, ep.P95, ep.P99)
		if ep.Share > 0 {
			g(catalogue.EnvelopeEndpointShare, ep.Share, name, metric, k, ep.Tag, ep.Value)
		}
	}
}
