package k6

import "strings"

// SplitName splits a metric or sub-metric name such as
// "http_req_duration{expected_response:true}" into the parent name and the
// selector tags, as k6 parses a threshold's selector: the text between the
// first '{' and the last '}' is split on ',', each part on its first ':',
// and spaces and quotes are trimmed. A plain name returns nil tags.
func SplitName(name string) (parent string, tags map[string]string) {
	open := strings.IndexByte(name, '{')
	closing := strings.LastIndexByte(name, '}')
	if open < 0 || closing < open {
		return name, nil
	}
	parent = strings.TrimSpace(name[:open])
	tags = map[string]string{}
	for part := range strings.SplitSeq(name[open+1:closing], ",") {
		k, v, _ := strings.Cut(part, ":")
		k = strings.Trim(strings.TrimSpace(k), `"'`)
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		if k != "" {
			tags[k] = v
		}
	}
	return parent, tags
}

// HTTPReqDuration is k6's request-duration trend, the one the
// envelope's overall latency bands, tag-selected endpoints and reports
// are measured on.
const HTTPReqDuration = "http_req_duration"

// HTTPReqFailed is k6's rate of failed requests: one sample a request,
// 1 when its response was not an expected one, else 0.
const HTTPReqFailed = "http_req_failed"

// builtin describes k6's built-in metrics, for formats that do not carry
// types (CSV, summary-export), inputs joined midway without their Metric
// line, OTLP without units, and to tell a script's custom metrics from
// k6's own. This is the one list: every package asks Builtin.
type builtin struct {
	typ      MetricType
	contains ValueType
}

var builtins = map[string]builtin{
	"vus":                        {Gauge, Default},
	"vus_max":                    {Gauge, Default},
	"iterations":                 {Counter, Default},
	"iteration_duration":         {Trend, Time},
	"dropped_iterations":         {Counter, Default},
	"checks":                     {Rate, Default},
	"group_duration":             {Trend, Time},
	"data_sent":                  {Counter, Data},
	"data_received":              {Counter, Data},
	"http_reqs":                  {Counter, Default},
	HTTPReqFailed:                {Rate, Default},
	HTTPReqDuration:              {Trend, Time},
	"http_req_blocked":           {Trend, Time},
	"http_req_connecting":        {Trend, Time},
	"http_req_tls_handshaking":   {Trend, Time},
	"http_req_sending":           {Trend, Time},
	"http_req_waiting":           {Trend, Time},
	"http_req_receiving":         {Trend, Time},
	"ws_sessions":                {Counter, Default},
	"ws_msgs_sent":               {Counter, Default},
	"ws_msgs_received":           {Counter, Default},
	"ws_ping":                    {Trend, Time},
	"ws_session_duration":        {Trend, Time},
	"ws_connecting":              {Trend, Time},
	"grpc_req_duration":          {Trend, Time},
	"grpc_streams":               {Counter, Default},
	"grpc_streams_msgs_sent":     {Counter, Default},
	"grpc_streams_msgs_received": {Counter, Default},
	// k6/browser.
	"browser_data_received":     {Counter, Data},
	"browser_data_sent":         {Counter, Data},
	"browser_http_req_duration": {Trend, Time},
	"browser_http_req_failed":   {Rate, Default},
	"browser_web_vital_cls":     {Trend, Default}, // layout shift score, no unit
	"browser_web_vital_fcp":     {Trend, Time},
	"browser_web_vital_fid":     {Trend, Time},
	"browser_web_vital_inp":     {Trend, Time},
	"browser_web_vital_lcp":     {Trend, Time},
	"browser_web_vital_ttfb":    {Trend, Time},
}

// Builtin reports the type and contents of a k6 built-in metric.
func Builtin(name string) (MetricType, ValueType, bool) {
	b, ok := builtins[name]
	return b.typ, b.contains, ok
}
