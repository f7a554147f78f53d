package ecs

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

// newDesc builds the client_golang descriptor of a catalogue entry, so the
// exposed names, help and labels cannot drift from the catalogue.
func newDesc(d catalogue.Desc) *prometheus.Desc {
	return prometheus.NewDesc(d.Name, d.Help, d.Labels, nil)
}

func valueType(d catalogue.Desc) prometheus.ValueType {
	if d.Type == catalogue.CounterType {
		return prometheus.CounterValue
	}
	return prometheus.GaugeValue
}

// collector reads /task and /task/stats on every scrape and mirrors them
// with MustNewConstMetric; it keeps no state between scrapes.
type collector struct {
	client *Client
	logger *slog.Logger
	descs  map[string]*prometheus.Desc
	kinds  map[string]prometheus.ValueType
}

// NewCollector returns the TMDS v4 collector. A failed or slow read of the
// endpoint yields ecs_up 0 and a logged reason; the collector never fails
// the whole scrape, so other collectors' series are still served.
func NewCollector(client *Client, logger *slog.Logger) prometheus.Collector {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &collector{client: client, logger: logger,
		descs: map[string]*prometheus.Desc{}, kinds: map[string]prometheus.ValueType{}}
	for _, d := range catalogue.ECSDescs() {
		c.descs[d.Name] = newDesc(d)
		c.kinds[d.Name] = valueType(d)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	task, stats, err := c.read(context.Background())
	up := 1.0
	if err != nil {
		up = 0
		c.logger.Warn("reading the ECS task metadata endpoint failed", "endpoint", c.client.Endpoint(), "err", err)
	}
	c.emit(ch, catalogue.ECSUp, up)
	c.emit(ch, catalogue.ECSScrapeDuration, time.Since(start).Seconds())
	if err != nil {
		return
	}
	collectTask(task, stats, func(d catalogue.Desc, v float64, labels ...string) {
		c.emit(ch, d, v, labels...)
	})
}

func (c *collector) read(ctx context.Context) (*TaskMetadata, map[string]*ContainerStats, error) {
	task, err := c.client.Task(ctx)
	if err != nil {
		return nil, nil, err
	}
	stats, err := c.client.TaskStats(ctx)
	if err != nil {
		return nil, nil, err
	}
	return task, stats, nil
}

func (c *collector) emit(ch chan<- prometheus.Metric, d catalogue.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(c.descs[d.Name], c.kinds[d.Name], v, labels...)
}

// emitFunc receives one sample of a catalogue series.
type emitFunc func(d catalogue.Desc, v float64, labels ...string)

// collectTask turns one /task and /task/stats pair into samples. Split
// from the collector so the golden tests and the operating point read the
// same figures.
func collectTask(task *TaskMetadata, stats map[string]*ContainerStats, emit emitFunc) {
	service := task.ServiceName
	emit(catalogue.ECSTaskMetadataInfo, 1,
		task.Cluster, ClusterName(task.Cluster), task.TaskARN, TaskID(task.TaskARN), task.Family, task.Revision,
		task.LaunchType, task.AvailabilityZone, service, task.DesiredStatus, task.KnownStatus)
	if v, ok := task.TaskCPULimitVCPUs(); ok {
		emit(catalogue.ECSTaskCPULimit, v)
	}
	if v, ok := task.TaskMemoryLimitBytes(); ok {
		emit(catalogue.ECSTaskMemoryLimit, v)
	}
	if es := task.EphemeralStorageMetrics; es != nil {
		emit(catalogue.ECSTaskEphemeralUsed, es.Utilized*mebibyte)
		emit(catalogue.ECSTaskEphemeralAllocated, es.Reserved*mebibyte)
	}
	if t := task.PullStartedAt; t != nil && !t.IsZero() {
		emit(catalogue.ECSTaskPullStart, unixSeconds(*t))
	}
	if t := task.PullStoppedAt; t != nil && !t.IsZero() {
		emit(catalogue.ECSTaskPullStop, unixSeconds(*t))
	}

	containers := append([]ContainerMetadata(nil), task.Containers...)
	sort.SliceStable(containers, func(i, j int) bool { return containers[i].Name < containers[j].Name })

	perContainerNet := task.PerContainerNetwork()
	shared := map[string]NetworkCounts{} // interface -> max counters, awsvpc/host

	for i := range containers {
		ct := &containers[i]
		name := ct.Name
		emit(catalogue.ECSContainerInfo, 1, name, ct.DockerID, ct.Image, ct.DesiredStatus, ct.KnownStatus)
		if ct.Limits != nil && ct.Limits.CPU != nil && *ct.Limits.CPU > 0 {
			emit(catalogue.ECSContainerCPULimit, *ct.Limits.CPU/cpuUnits, name)
		}
		if ct.RestartCount != nil {
			emit(catalogue.ECSContainerRestarts, float64(*ct.RestartCount), name)
		}
		if ct.ExitCode != nil {
			emit(catalogue.ECSContainerExitCode, float64(*ct.ExitCode), name)
		}

		s := stats[ct.DockerID]
		if s.Empty() {
			// Stopped (null on Fargate, {} on EC2) or not yet sampled:
			// only the /task figures above are known.
			continue
		}
		emit(catalogue.ECSContainerCPUUsage, float64(s.CPUStats.Usage.Total)*nanoseconds, name)
		emit(catalogue.ECSContainerCPUUser, float64(s.CPUStats.Usage.User)*nanoseconds, name)
		emit(catalogue.ECSContainerCPUSystem, float64(s.CPUStats.Usage.Kernel)*nanoseconds, name)
		emit(catalogue.ECSContainerMemoryUsage, float64(s.Memory.Usage), name)
		emit(catalogue.ECSContainerMemoryWorkingSet, float64(s.Memory.WorkingSet()), name)
		emit(catalogue.ECSContainerMemoryPageCache, float64(s.Memory.PageCache()), name)
		if v, ok := task.MemoryLimitBytes(ct, s); ok {
			emit(catalogue.ECSContainerMemoryLimit, v, name)
		}
		if s.PidsStats.Current != nil {
			emit(catalogue.ECSContainerPids, float64(*s.PidsStats.Current), name)
		}
		r, w := s.Blkio.BlkioBytes()
		emit(catalogue.ECSContainerBlkioRead, float64(r), name)
		emit(catalogue.ECSContainerBlkioWrite, float64(w), name)

		if perContainerNet {
			for _, iface := range sortedKeys(s.Networks) {
				emitNetwork(emit, name, iface, s.Networks[iface])
			}
			continue
		}
		for iface, n := range s.Networks {
			shared[iface] = maxCounts(shared[iface], n)
		}
	}
	for _, iface := range sortedKeys(shared) {
		emitNetwork(emit, "", iface, shared[iface])
	}
}

func emitNetwork(emit emitFunc, container, iface string, n NetworkCounts) {
	emit(catalogue.ECSNetworkReceiveBytes, float64(n.RxBytes), container, iface)
	emit(catalogue.ECSNetworkReceivePackets, float64(n.RxPackets), container, iface)
	emit(catalogue.ECSNetworkReceiveDropped, float64(n.RxDropped), container, iface)
	emit(catalogue.ECSNetworkReceiveErrors, float64(n.RxErrors), container, iface)
	emit(catalogue.ECSNetworkTransmitBytes, float64(n.TxBytes), container, iface)
	emit(catalogue.ECSNetworkTransmitPackets, float64(n.TxPackets), container, iface)
	emit(catalogue.ECSNetworkTransmitDropped, float64(n.TxDropped), container, iface)
	emit(catalogue.ECSNetworkTransmitErrors, float64(n.TxErrors), container, iface)
}

// maxCounts merges two readings of a shared interface. Every container
// reports the task ENI's counters, sampled at slightly different times;
// counters only grow, so the field-wise maximum is the freshest reading.
func maxCounts(a, b NetworkCounts) NetworkCounts {
	m := func(x, y uint64) uint64 { return max(x, y) }
	return NetworkCounts{
		RxBytes: m(a.RxBytes, b.RxBytes), RxPackets: m(a.RxPackets, b.RxPackets),
		RxErrors: m(a.RxErrors, b.RxErrors), RxDropped: m(a.RxDropped, b.RxDropped),
		TxBytes: m(a.TxBytes, b.TxBytes), TxPackets: m(a.TxPackets, b.TxPackets),
		TxErrors: m(a.TxErrors, b.TxErrors), TxDropped: m(a.TxDropped, b.TxDropped),
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// unixSeconds multiplies by 1e-9 as ecs_exporter does, so the float64
// rounding matches its output exactly.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) * nanoseconds }
