package exporter

import (
	"slices"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
)

// Default classic bucket upper bounds by k6 value type. Time trends use a
// 1-2.5-5 ladder from 1 ms to 60 s; envelope band edges are added to it.
// Callers clone them: every family gets its own slice.
var (
	timeBuckets    = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	dataBuckets    = []float64{256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	defaultBuckets = []float64{1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}
)

// classicBuckets is the classic bucket layout of a k6 trend: the default
// ladder for its value type plus, for time trends, the band edges every
// served envelope gives that trend (envelope.BucketEdges, which the alert
// rules' thresholds come from too). Every series of a family shares it,
// so `sum by (le)` works across label sets, k6 instances and exporters
// fed the same envelopes, and each envelope's rules find the le their
// thresholds name.
func classicBuckets(envs []*envelope.Envelope, k6Metric string, contains k6.ValueType) []float64 {
	switch contains {
	case k6.Time:
	case k6.Data:
		return slices.Clone(dataBuckets)
	default:
		return slices.Clone(defaultBuckets)
	}
	b := slices.Clone(timeBuckets)
	for _, env := range envs {
		b = append(b, env.BucketEdges(k6Metric)...)
	}
	slices.Sort(b)
	return slices.Compact(b)
}
