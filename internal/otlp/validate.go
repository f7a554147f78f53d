package otlp

// Validation of histogram data points before anything is applied.

import (
	"fmt"
	"math"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkHistogram says what is wrong with an explicit histogram point, or "".
func checkHistogram(dp *metricpb.HistogramDataPoint, unitScale float64) string {
	bounds, counts := dp.GetExplicitBounds(), dp.GetBucketCounts()
	switch {
	case len(bounds) > MaxExplicitBounds:
		return fmt.Sprintf("%d bounds, more than %d", len(bounds), MaxExplicitBounds)
	case len(counts) != len(bounds)+1:
		return fmt.Sprintf("%d bucket counts for %d bounds", len(counts), len(bounds))
	case !finite(dp.GetSum() * unitScale):
		return fmt.Sprintf("sum %v", dp.GetSum())
	case dp.Min != nil && !finite(dp.GetMin()*unitScale), dp.Max != nil && !finite(dp.GetMax()*unitScale):
		return fmt.Sprintf("min %v or max %v", dp.GetMin(), dp.GetMax())
	}
	prev := math.Inf(-1)
	for _, b := range bounds {
		if !finite(b*unitScale) || b <= prev {
			return "bounds not finite and strictly increasing"
		}
		prev = b
	}
	var total uint64
	for _, n := range counts {
		if total+n < total {
			return "bucket counts overflow"
		}
		total += n
	}
	if total != dp.GetCount() {
		return fmt.Sprintf("bucket counts add up to %d, count is %d", total, dp.GetCount())
	}
	return ""
}

// checkExponential says what is wrong with an exponential histogram
// point, or "".
func checkExponential(dp *metricpb.ExponentialHistogramDataPoint, unitScale float64) string {
	np, nn := len(dp.GetPositive().GetBucketCounts()), len(dp.GetNegative().GetBucketCounts())
	switch {
	case np+nn > MaxExponentialBuckets:
		return fmt.Sprintf("%d buckets, more than %d", np+nn, MaxExponentialBuckets)
	case dp.GetScale() < -10 || dp.GetScale() > 20:
		return fmt.Sprintf("scale %d outside [-10, 20]", dp.GetScale())
	case !finite(dp.GetSum() * unitScale):
		return fmt.Sprintf("sum %v", dp.GetSum())
	}
	for _, b := range []*metricpb.ExponentialHistogramDataPoint_Buckets{dp.GetPositive(), dp.GetNegative()} {
		if n := len(b.GetBucketCounts()); n > 0 && int64(b.GetOffset())+int64(n) > math.MaxInt32-1 {
			return "bucket offset out of range"
		}
	}
	total := dp.GetZeroCount()
	for _, cs := range [][]uint64{dp.GetPositive().GetBucketCounts(), dp.GetNegative().GetBucketCounts()} {
		for _, n := range cs {
			if total+n < total || n > MaxRate {
				return "bucket counts overflow"
			}
			total += n
		}
	}
	if total != dp.GetCount() {
		return fmt.Sprintf("bucket counts add up to %d, count is %d", total, dp.GetCount())
	}
	return ""
}
