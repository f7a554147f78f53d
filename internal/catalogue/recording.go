package catalogue

// Recording rules shared by the rules and dashboards generators, named
// level:metric:operations. Aggregations keep testid so several exporters
// and k6 instances sum correctly; quantiles are computed from summed
// histogram rates, never averaged.
const (
	RecThroughput    = "testid:k6_http_reqs:rate1m"
	RecIterationRate = "testid:k6_iterations:rate1m"
	RecErrorRatio    = "testid:k6_http_req_failed:ratio_rate1m"
	RecLatencyP50    = "testid:k6_http_req_duration_seconds:p50_rate1m"
	RecLatencyP95    = "testid:k6_http_req_duration_seconds:p95_rate1m"
	RecLatencyP99    = "testid:k6_http_req_duration_seconds:p99_rate1m"
	RecEndpointRate  = "testid_name:k6_http_reqs:rate1m"
	RecEndpointP95   = "testid_name:k6_http_req_duration_seconds:p95_rate1m"
	RecEndpointP99   = "testid_name:k6_http_req_duration_seconds:p99_rate1m"
	RecThroughputCV  = "testid:k6_http_reqs:cv_rate1m_10m"
)
