package catalogue

// Recording rules shared by the rules and dashboards generators, named
// level:metric:operations. Aggregations keep testid (and the topology
// labels job, namespace, cluster) so several exporters and k6 instances
// sum correctly; every recorded series carries the envelope label of the
// envelope whose rules wrote it; quantiles are computed from summed
// histogram rates (native first, classic buckets as fallback), never
// averaged; ratios divide summed rates.
//
// These names are stable: dashboards query them. The alert rules use the
// envelope's own window (Tolerance.Window) inline, so changing the window
// never renames a recorded series.
const (
	// Overall, by testid.
	RecThroughput    = "testid:k6_http_reqs:rate1m"
	RecIterationRate = "testid:k6_iterations:rate1m"
	RecErrorRatio    = "testid:k6_http_req_failed:ratio_rate1m"
	RecLatencyP50    = "testid:k6_http_req_duration_seconds:p50_rate1m"
	RecLatencyP95    = "testid:k6_http_req_duration_seconds:p95_rate1m"
	RecLatencyP99    = "testid:k6_http_req_duration_seconds:p99_rate1m"
	// Throughput CV: stddev over mean of the 1m rate across 10m.
	RecThroughputCV = "testid:k6_http_reqs:cv_rate1m_10m"

	// Per endpoint, by testid and the k6 name tag.
	RecEndpointRate       = "testid_name:k6_http_reqs:rate1m"
	RecEndpointErrorRatio = "testid_name:k6_http_req_failed:ratio_rate1m"
	RecEndpointP50        = "testid_name:k6_http_req_duration_seconds:p50_rate1m"
	RecEndpointP95        = "testid_name:k6_http_req_duration_seconds:p95_rate1m"
	RecEndpointP99        = "testid_name:k6_http_req_duration_seconds:p99_rate1m"

	// Saturation signals. Requests per second per active VU falls when
	// the system saturates under a closed (VU) model; the envelope ratios
	// are the observed value over the envelope's mean (throughput) or the
	// top of its band (p95), so 1 means "at the envelope".
	RecThroughputPerVU      = "testid:k6_http_reqs_per_vus:ratio_rate1m"
	RecThroughputVsEnvelope = "testid:k6_http_reqs:envelope_ratio_rate1m"
	RecLatencyP95VsEnvelope = "testid:k6_http_req_duration_seconds:p95_envelope_ratio_rate1m"
)

// RecordingRules lists every recording rule name, the ECS ones last, in
// generation order; a fresh slice each call.
func RecordingRules() []string {
	return append([]string{
		RecThroughput, RecIterationRate, RecErrorRatio,
		RecLatencyP50, RecLatencyP95, RecLatencyP99, RecThroughputCV,
		RecEndpointRate, RecEndpointErrorRatio, RecEndpointP50, RecEndpointP95, RecEndpointP99,
		RecThroughputPerVU, RecThroughputVsEnvelope, RecLatencyP95VsEnvelope,
	}, ecsRecordingRules()...)
}
