// Package otlp receives OpenTelemetry metrics as k6's OpenTelemetry
// output sends them (`k6 run --out opentelemetry`, OTLP/HTTP on
// /v1/metrics, protobuf or JSON) and turns them into k6 samples for a
// Sink.
//
// k6 maps its metric types onto OTel instruments: Counter to a monotonic
// Sum, Gauge to a Gauge, Rate to an integer counter named "<name>.total"
// with a "condition" attribute (zero|nonzero), Trend to a Histogram in ms
// (explicit buckets by default, exponential when the SDK is told so).
// Exports are cumulative by default: each repeats totals since the start.
// The Receiver keeps the last value of every stream (resource, metric,
// attributes, start time) and hands the Sink only what changed, so
// several k6 instances pushing to one exporter add up, and a restarted
// stream (new start time, or a lower count) starts again from zero.
// Delta temporality is passed through as is.
package otlp

import (
	"compress/gzip"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/k6"
)

// DefaultMaxBody is the largest request body accepted (after gzip
// decoding); k6 sends a few tens of kilobytes every 10 s.
const DefaultMaxBody = 16 << 20

// Request outcomes, the values of the exporter's outcome label.
const (
	OutcomeOK               = "ok"
	OutcomePartial          = "partial"
	OutcomeBadRequest       = "bad_request"
	OutcomeTooLarge         = "too_large"
	OutcomeUnsupportedMedia = "unsupported_media_type"
	OutcomeMethod           = "method_not_allowed"
)

// Outcomes lists every outcome.
var Outcomes = []string{OutcomeOK, OutcomePartial, OutcomeBadRequest, OutcomeTooLarge, OutcomeUnsupportedMedia, OutcomeMethod}

// Sink takes the samples. Names are k6 metric names (prefix and ".total"
// removed); values are in k6 units (ms for time).
type Sink interface {
	// Define types a metric; false refuses it (a type clash).
	Define(name string, typ k6.MetricType, contains k6.ValueType) bool
	AddCounter(name string, tags map[string]string, delta float64)
	SetGauge(name string, tags map[string]string, v float64)
	AddRate(name string, tags map[string]string, zero, nonzero uint64)
	// AddBuckets adds counts[i] samples at values[i] and sum to the total.
	AddBuckets(name string, tags map[string]string, values []float64, counts []uint64, sum float64)
	// Ingested reports data points taken and the newest point's time (ns).
	Ingested(n int, newestUnixNano int64)
}

// Options configure a Receiver.
type Options struct {
	MaxBody int64  // 0 = DefaultMaxBody
	Prefix  string // K6_OTEL_METRIC_PREFIX; "" strips "k6_" when present
	// OnRequest is told each request's outcome, the points taken and the
	// error that rejected the request (nil when accepted).
	OnRequest func(outcome string, points int, err error)
	// OnBad is told each skipped data point's reason.
	OnBad func(reason string, err error)
}

// Receiver is the /v1/metrics handler.
type Receiver struct {
	sink Sink
	opts Options

	mu      sync.Mutex
	seed    maphash.Seed
	streams map[uint64]*stream
}

// stream is the last cumulative state of one data point stream.
type stream struct {
	start   uint64
	value   float64
	count   uint64
	sum     float64
	buckets []uint64          // explicit histogram counts
	bounds  []float64         // their bounds, to detect a layout change
	exp     map[int32]float64 // exponential: signed bucket key -> count (see expKey)
	zero    uint64
	scale   int32
}

// NewReceiver builds a Receiver feeding sink.
func NewReceiver(sink Sink, opts Options) *Receiver {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.OnRequest == nil {
		opts.OnRequest = func(string, int, error) {}
	}
	if opts.OnBad == nil {
		opts.OnBad = func(string, error) {}
	}
	return &Receiver{sink: sink, opts: opts, seed: maphash.MakeSeed(), streams: map[uint64]*stream{}}
}

// ServeHTTP implements OTLP/HTTP: POST, Content-Type application/x-protobuf
// or application/json, optional gzip Content-Encoding. 413 beyond the
// body limit, 415 for another content type, 400 for an undecodable body.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		rc.fail(w, http.StatusMethodNotAllowed, OutcomeMethod, fmt.Errorf("method %s: OTLP/HTTP takes POST", r.Method))
		return
	}
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	isJSON := ct == "application/json"
	if err != nil || !(isJSON || ct == "application/x-protobuf" || ct == "application/protobuf") {
		rc.fail(w, http.StatusUnsupportedMediaType, OutcomeUnsupportedMedia,
			fmt.Errorf("content type %q: want application/x-protobuf or application/json", r.Header.Get("Content-Type")))
		return
	}
	body, status, err := rc.read(w, r)
	if err != nil {
		outcome := OutcomeBadRequest
		if status == http.StatusRequestEntityTooLarge {
			outcome = OutcomeTooLarge
		}
		rc.fail(w, status, outcome, err)
		return
	}
	req := &colmetricpb.ExportMetricsServiceRequest{}
	if isJSON {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, req)
	} else {
		err = proto.Unmarshal(body, req)
	}
	if err != nil {
		rc.fail(w, http.StatusBadRequest, OutcomeBadRequest, fmt.Errorf("decoding OTLP %s body: %w", ct, err))
		return
	}
	taken, rejected, msg := rc.Consume(req)
	resp := &colmetricpb.ExportMetricsServiceResponse{}
	outcome := OutcomeOK
	if rejected > 0 {
		outcome = OutcomePartial
		resp.PartialSuccess = &colmetricpb.ExportMetricsPartialSuccess{RejectedDataPoints: int64(rejected), ErrorMessage: msg}
	}
	rc.opts.OnRequest(outcome, taken, nil)
	var out []byte
	if isJSON {
		out, _ = protojson.Marshal(resp)
		w.Header().Set("Content-Type", "application/json")
	} else {
		out, _ = proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

func (rc *Receiver) read(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	if r.ContentLength > rc.opts.MaxBody {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes exceeds the %d-byte limit", r.ContentLength, rc.opts.MaxBody)
	}
	var src io.Reader = http.MaxBytesReader(w, r.Body, rc.opts.MaxBody)
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity":
	case "gzip":
		gz, err := gzip.NewReader(src)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
		}
		defer gz.Close()
		src = gz
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q: want gzip or none", r.Header.Get("Content-Encoding"))
	}
	// The limit also bounds the decoded size (a gzip bomb).
	body, err := io.ReadAll(io.LimitReader(src, rc.opts.MaxBody+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), int64(len(body)) > rc.opts.MaxBody:
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the %d-byte limit", rc.opts.MaxBody)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("reading body: %w", err)
	}
	return body, 0, nil
}

func (rc *Receiver) fail(w http.ResponseWriter, status int, outcome string, err error) {
	rc.opts.OnRequest(outcome, 0, err)
	http.Error(w, err.Error(), status)
}

// Consume applies one export request; it returns the data points taken,
// those rejected and a message about the first rejection.
func (rc *Receiver) Consume(req *colmetricpb.ExportMetricsServiceRequest) (taken, rejected int, msg string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var newest uint64
	reject := func(reason string, err error) {
		rejected++
		if msg == "" {
			msg = err.Error()
		}
		rc.opts.OnBad(reason, err)
	}
	for _, rm := range req.GetResourceMetrics() {
		resKey := attrKey(rm.GetResource().GetAttributes())
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				n, err := rc.metric(resKey, m, &newest)
				taken += n
				if err != nil {
					reject(err.reason, err)
				}
			}
		}
	}
	rc.sink.Ingested(taken, int64(newest))
	return taken, rejected, msg
}

// pointError says why a metric's data points were skipped.
type pointError struct {
	reason string
	metric string
	msg    string
}

func (e *pointError) Error() string { return fmt.Sprintf("metric %q: %s", e.metric, e.msg) }

func (rc *Receiver) name(otelName string) (name string, isRate bool, ok bool) {
	name = otelName
	if rc.opts.Prefix != "" {
		if !strings.HasPrefix(name, rc.opts.Prefix) {
			return "", false, false
		}
		name = name[len(rc.opts.Prefix):]
	} else {
		name = strings.TrimPrefix(name, "k6_")
	}
	name, isRate = strings.CutSuffix(name, ".total")
	return name, isRate, name != ""
}

func contains(unit string) (k6.ValueType, float64) {
	switch unit {
	case "ms":
		return k6.Time, 1
	case "s":
		return k6.Time, 1000
	case "us":
		return k6.Time, 1.0 / 1000
	case "By":
		return k6.Data, 1
	}
	return k6.Default, 1
}

func (rc *Receiver) metric(resKey string, m *metricpb.Metric, newest *uint64) (int, *pointError) {
	name, isRate, ok := rc.name(m.GetName())
	if !ok {
		return 0, &pointError{"prefix", m.GetName(), fmt.Sprintf("name lacks the metric prefix %q", rc.opts.Prefix)}
	}
	cont, unitScale := contains(m.GetUnit())
	perr := func(reason, format string, a ...any) *pointError {
		return &pointError{reason, m.GetName(), fmt.Sprintf(format, a...)}
	}
	seen := func(t uint64) {
		if t > *newest {
			*newest = t
		}
	}
	n := 0
	switch d := m.GetData().(type) {
	case *metricpb.Metric_Sum:
		cum := d.Sum.GetAggregationTemporality() != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		typ := k6.Counter
		switch {
		case isRate:
			typ = k6.Rate
		case !d.Sum.GetIsMonotonic():
			typ = k6.Gauge
		}
		if !rc.sink.Define(name, typ, cont) {
			return 0, perr("type_conflict", "already defined with another type")
		}
		for _, dp := range d.Sum.GetDataPoints() {
			v := number(dp)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				rc.opts.OnBad("bad_value", perr("bad_value", "value %v", v))
				continue
			}
			tags, cond := tagsOf(dp.GetAttributes())
			seen(dp.GetTimeUnixNano())
			n++
			if typ == k6.Gauge {
				rc.sink.SetGauge(name, tags, v*unitScale)
				continue
			}
			delta := v
			if cum {
				st := rc.stream(resKey, m.GetName(), dp.GetAttributes(), dp.GetStartTimeUnixNano())
				if v >= st.value {
					delta = v - st.value
				} // else a reset: the whole value is new
				st.value = v
			}
			if typ == k6.Rate {
				if delta < 0 {
					continue
				}
				if cond == "nonzero" {
					rc.sink.AddRate(name, tags, 0, uint64(delta))
				} else {
					rc.sink.AddRate(name, tags, uint64(delta), 0)
				}
				continue
			}
			if delta < 0 {
				// A monotonic sum never goes down: a negative delta or a
				// negative value after a reset is bad data.
				n--
				rc.opts.OnBad("bad_value", perr("bad_value", "negative increment %v of a monotonic sum", delta))
				continue
			}
			rc.sink.AddCounter(name, tags, delta*unitScale)
		}
	case *metricpb.Metric_Gauge:
		if !rc.sink.Define(name, k6.Gauge, cont) {
			return 0, perr("type_conflict", "already defined with another type")
		}
		for _, dp := range d.Gauge.GetDataPoints() {
			tags, _ := tagsOf(dp.GetAttributes())
			seen(dp.GetTimeUnixNano())
			n++
			rc.sink.SetGauge(name, tags, number(dp)*unitScale)
		}
	case *metricpb.Metric_Histogram:
		if !rc.sink.Define(name, k6.Trend, cont) {
			return 0, perr("type_conflict", "already defined with another type")
		}
		cum := d.Histogram.GetAggregationTemporality() != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range d.Histogram.GetDataPoints() {
			bounds, counts := dp.GetExplicitBounds(), dp.GetBucketCounts()
			if len(counts) != len(bounds)+1 || !slices.IsSorted(bounds) {
				rc.opts.OnBad("bad_histogram", perr("bad_histogram", "%d bucket counts for %d bounds", len(counts), len(bounds)))
				continue
			}
			tags, _ := tagsOf(dp.GetAttributes())
			seen(dp.GetTimeUnixNano())
			n++
			dc, dsum := slices.Clone(counts), dp.GetSum()
			if cum {
				st := rc.stream(resKey, m.GetName(), dp.GetAttributes(), dp.GetStartTimeUnixNano())
				if dp.GetCount() >= st.count && slices.Equal(bounds, st.bounds) && len(st.buckets) == len(counts) {
					for i := range dc {
						dc[i] = counts[i] - min(st.buckets[i], counts[i])
					}
					dsum -= st.sum
				}
				st.count, st.sum, st.buckets, st.bounds = dp.GetCount(), dp.GetSum(), slices.Clone(counts), slices.Clone(bounds)
			}
			values := make([]float64, len(dc))
			for i := range dc {
				values[i] = representative(bounds, i, dp) * unitScale
			}
			rc.sink.AddBuckets(name, tags, values, dc, dsum*unitScale)
		}
	case *metricpb.Metric_ExponentialHistogram:
		if !rc.sink.Define(name, k6.Trend, cont) {
			return 0, perr("type_conflict", "already defined with another type")
		}
		cum := d.ExponentialHistogram.GetAggregationTemporality() != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range d.ExponentialHistogram.GetDataPoints() {
			tags, _ := tagsOf(dp.GetAttributes())
			seen(dp.GetTimeUnixNano())
			n++
			cur := expCounts(dp)
			dzero, dsum := dp.GetZeroCount(), dp.GetSum()
			delta := cur
			if cum {
				st := rc.stream(resKey, m.GetName(), dp.GetAttributes(), dp.GetStartTimeUnixNano())
				if dp.GetCount() >= st.count && dp.GetScale() == st.scale && st.exp != nil {
					delta = map[int32]float64{}
					for k, c := range cur {
						if d := c - st.exp[k]; d > 0 {
							delta[k] = d
						}
					}
					dzero -= min(st.zero, dzero)
					dsum -= st.sum
				}
				st.count, st.sum, st.zero, st.scale, st.exp = dp.GetCount(), dp.GetSum(), dp.GetZeroCount(), dp.GetScale(), cur
			}
			base := math.Exp2(math.Exp2(-float64(dp.GetScale())))
			values := []float64{0}
			counts := []uint64{dzero}
			keys := make([]int32, 0, len(delta))
			for k := range delta {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				idx, sign := k, 1.0
				if k < 0 {
					idx, sign = -k-1, -1
				}
				// OTel bucket idx holds (base^idx, base^(idx+1)]; use its
				// geometric middle.
				values = append(values, sign*math.Pow(base, float64(idx)+0.5)*unitScale)
				counts = append(counts, uint64(delta[k]))
			}
			rc.sink.AddBuckets(name, tags, values, counts, dsum*unitScale)
		}
	default:
		return 0, perr("unsupported_type", "data type %T is not produced by k6", m.GetData())
	}
	return n, nil
}

// expCounts keys positive bucket i as i and negative bucket i as -i-1.
func expCounts(dp *metricpb.ExponentialHistogramDataPoint) map[int32]float64 {
	out := map[int32]float64{}
	if p := dp.GetPositive(); p != nil {
		for j, c := range p.GetBucketCounts() {
			if c > 0 {
				out[p.GetOffset()+int32(j)] = float64(c)
			}
		}
	}
	if ng := dp.GetNegative(); ng != nil {
		for j, c := range ng.GetBucketCounts() {
			if c > 0 {
				out[-(ng.GetOffset()+int32(j))-1] = float64(c)
			}
		}
	}
	return out
}

// representative is the value standing for bucket i's samples: the
// middle of (bounds[i-1], bounds[i]]; the first bucket's upper bound
// (k6's is 0); the last bucket's lower bound, or the max when known.
func representative(bounds []float64, i int, dp *metricpb.HistogramDataPoint) float64 {
	switch {
	case len(bounds) == 0:
		if dp.Count > 0 {
			return dp.GetSum() / float64(dp.GetCount())
		}
		return 0
	case i == 0:
		if dp.Min != nil && dp.GetMin() <= bounds[0] {
			return (dp.GetMin() + bounds[0]) / 2
		}
		return bounds[0]
	case i == len(bounds):
		if dp.Max != nil && dp.GetMax() > bounds[i-1] {
			return (bounds[i-1] + dp.GetMax()) / 2
		}
		return bounds[i-1]
	}
	return (bounds[i-1] + bounds[i]) / 2
}

func number(dp *metricpb.NumberDataPoint) float64 {
	if v, ok := dp.GetValue().(*metricpb.NumberDataPoint_AsInt); ok {
		return float64(v.AsInt)
	}
	return dp.GetAsDouble()
}

// tagsOf turns attributes into k6 tags, taking "condition" apart.
func tagsOf(attrs []*commonpb.KeyValue) (map[string]string, string) {
	tags := make(map[string]string, len(attrs))
	cond := ""
	for _, kv := range attrs {
		v := anyString(kv.GetValue())
		if kv.GetKey() == "condition" {
			cond = v
			continue
		}
		tags[kv.GetKey()] = v
	}
	return tags, cond
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return ""
}

func attrKey(attrs []*commonpb.KeyValue) string {
	parts := make([]string, 0, len(attrs))
	for _, kv := range attrs {
		parts = append(parts, kv.GetKey()+"\xfe"+anyString(kv.GetValue()))
	}
	slices.Sort(parts)
	return strings.Join(parts, "\xff")
}

// stream finds or creates the state of a cumulative stream; a new start
// time replaces the state (the producer restarted).
func (rc *Receiver) stream(resKey, metric string, attrs []*commonpb.KeyValue, start uint64) *stream {
	var h maphash.Hash
	h.SetSeed(rc.seed)
	h.WriteString(resKey)
	h.WriteByte(0)
	h.WriteString(metric)
	h.WriteByte(0)
	h.WriteString(attrKey(attrs))
	k := h.Sum64()
	st := rc.streams[k]
	if st == nil || st.start != start {
		st = &stream{start: start}
		rc.streams[k] = st
	}
	return st
}
