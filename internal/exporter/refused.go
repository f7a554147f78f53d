package exporter

import (
	"hash/maphash"
	"sync"
)

// refusedMetricsMax bounds the metric names remembered as refused by the
// metric limit: their hashes, about 40 bytes each (2.5 MiB).
const refusedMetricsMax = 1 << 16

// refusedMetrics remembers the metrics whose definition (an NDJSON
// Metric line, DefineMetric) the metric limit refused. A definition is
// not a sample, so it is not counted; each sample of such a metric is,
// as dropped over the metric limit, and not as an unknown metric. When
// refusedMetricsMax names are held it starts afresh: k6 writes a
// metric's definition just before its first sample, so the recent
// refusals are the ones its samples need.
type refusedMetrics struct {
	mu    sync.Mutex
	seed  maphash.Seed
	names map[uint64]struct{}
}

func newRefusedMetrics() *refusedMetrics {
	return &refusedMetrics{seed: maphash.MakeSeed(), names: map[uint64]struct{}{}}
}

func (r *refusedMetrics) add(name string) {
	h := maphash.String(r.seed, name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.names) >= refusedMetricsMax {
		clear(r.names)
	}
	r.names[h] = struct{}{}
}

// forget drops a name once its metric is defined after all (the limit
// freed by expiry).
func (r *refusedMetrics) forget(name string) {
	h := maphash.String(r.seed, name)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.names, h)
}

func (r *refusedMetrics) has(name string) bool {
	h := maphash.String(r.seed, name)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.names[h]
	return ok
}
