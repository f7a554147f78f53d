package cloudwatch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

// collector serves the poller's last values; it never calls CloudWatch.
type collector struct {
	p     *Poller
	descs map[string]*prometheus.Desc
}

// NewCollector returns the collector for p's values and self-metrics.
func NewCollector(p *Poller) prometheus.Collector {
	c := &collector{p: p, descs: map[string]*prometheus.Desc{}}
	for _, d := range catalogue.CloudWatchDescs() {
		c.descs[d.Name] = prometheus.NewDesc(d.Name, d.Help, d.Labels, nil)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.snapshot()
	gauge := func(d catalogue.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[d.Name], prometheus.GaugeValue, v, labels...)
	}
	counter := func(d catalogue.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[d.Name], prometheus.CounterValue, v, labels...)
	}

	up := 0.0
	if s.up {
		up = 1
	}
	gauge(catalogue.CloudWatchUp, up)
	for _, outcome := range []string{"success", "error"} {
		counter(catalogue.CloudWatchRequests, s.requests[outcome], outcome)
	}
	for _, reason := range []string{"throttled", "credentials", "other"} {
		counter(catalogue.CloudWatchErrors, s.errors[reason], reason)
	}
	counter(catalogue.CloudWatchMetricsRequested, s.metricsReq)
	if !s.lastSuccess.IsZero() {
		gauge(catalogue.CloudWatchLastSuccess, float64(s.lastSuccess.UnixNano())*1e-9)
	}
	if s.polled {
		gauge(catalogue.CloudWatchPollDuration, s.pollDuration.Seconds())
	}

	cluster := c.p.cluster
	for _, q := range c.p.queries {
		pt, ok := s.points[q.id]
		if !ok {
			continue // no datapoint yet: absent rather than a made-up 0
		}
		labels := []string{cluster, q.service}
		if q.spec.statLabel {
			labels = append(labels, q.spec.stat)
		}
		m := prometheus.MustNewConstMetric(c.descs[q.spec.desc.Name], prometheus.GaugeValue, q.spec.convert(pt.value), labels...)
		if c.p.cfg.SetTimestamps {
			m = prometheus.NewMetricWithTimestamp(pt.ts, m)
		}
		ch <- m
		metric := q.spec.name
		if q.spec.statLabel {
			metric += "_" + q.spec.stat
		}
		gauge(catalogue.ECSServiceDatapointTimestamp, float64(pt.ts.Unix()), cluster, q.service, metric)
	}
}
