package catalogue

import "strings"

// Series name of a k6 metric, by k6 type and contents. Trends become
// histograms in base units (k6 writes milliseconds; we expose seconds).
//
//	counter   http_reqs          -> k6_http_reqs_total
//	counter   data_sent (data)   -> k6_data_sent_bytes_total
//	rate      http_req_failed    -> k6_http_req_failed_total{condition}
//	gauge     vus                -> k6_vus
//	trend     actor_get (time)   -> k6_actor_get_seconds
//	trend     batch_size (data)  -> k6_batch_size_bytes
func SeriesName(k6Metric, k6Type, contains string) string {
	base := K6Namespace + "_" + sanitize(k6Metric)
	unit := ""
	switch contains {
	case "time":
		unit = "_seconds"
	case "data":
		unit = "_bytes"
	}
	switch k6Type {
	case "counter":
		return base + unit + "_total"
	case "rate":
		return base + "_total"
	case "gauge":
		return base + unit
	default: // trend
		return base + unit
	}
}

// sanitize maps a k6 metric name onto the Prometheus name alphabet.
func sanitize(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r == ':':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
