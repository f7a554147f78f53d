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
// The Receiver keeps the last point of every stream (see cumulative.go)
// and hands the Sink only what changed, so several k6 instances pushing
// to one exporter add up, and a restarted stream (new start time) starts
// again from zero. Exponential histograms are differenced at their
// common scale (expdiff.go), so the SDK's rescaling moves no count. A
// lower value with the same start time is a late or repeated export: it
// adds nothing and is refused ("late_point"), as the OTel data model has
// it. Delta temporality is passed through as is.
//
// Every data point is checked before it reaches the Sink (finite values,
// consistent bucket counts, bounded layouts); refused points are counted
// in the reply's partial_success.
package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
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
	"sync/atomic"
	"time"
	"unicode/utf8"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
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
	OutcomeBusy             = "busy"
	OutcomeUnauthorized     = "unauthorized"
)

// Outcomes lists every outcome.
var Outcomes = []string{OutcomeOK, OutcomePartial, OutcomeBadRequest, OutcomeTooLarge, OutcomeUnsupportedMedia, OutcomeMethod, OutcomeBusy, OutcomeUnauthorized}

// BusyWait is how long a request waits for a decoding slot before it is
// refused with 503 (gRPC: UNAVAILABLE) and a Retry-After of RetryAfter.
const (
	BusyWait   = 500 * time.Millisecond
	RetryAfter = "1"
)

// Sink takes the samples. Names are k6 metric names (prefix and ".total"
// removed); values are in k6 units (ms for time). A non-nil error (a
// *Refusal, or another error for reason "bad_value") refuses the data
// point: the receiver rejects it in the reply and reports it to Refuse.
// Sink methods count nothing themselves.
type Sink interface {
	// Define types a metric; a non-nil error refuses it (a type clash, a
	// name limit).
	Define(name string, typ k6.MetricType, contains k6.ValueType) error
	AddCounter(name string, tags map[string]string, delta float64) error
	SetGauge(name string, tags map[string]string, v float64) error
	AddRate(name string, tags map[string]string, zero, nonzero uint64) error
	// AddBuckets adds counts[i] samples at values[i] and sum to the total.
	AddBuckets(name string, tags map[string]string, values []float64, counts []uint64, sum float64) error
	// Ingested reports data points taken and the newest point's time (ns).
	Ingested(n int, newestUnixNano int64)
	// Refuse is told each refusal once, with the number of data points
	// it refused: the one place they are counted.
	Refuse(r *Refusal, points int)
}

// Limits on one data point and on the receiver's state.
const (
	// MaxExplicitBounds bounds an explicit histogram's bucket layout (k6
	// sends 15 bounds by default).
	MaxExplicitBounds = 1024
	// MaxExponentialBuckets bounds an exponential histogram's positive
	// plus negative bucket counts (the OTel SDK default is 160 each).
	MaxExponentialBuckets = 4096
	// MaxRate bounds a Rate delta: beyond 2^53 a float no longer holds an
	// exact count.
	MaxRate = 1 << 53
	// DefaultStreamLimit bounds the cumulative streams remembered.
	DefaultStreamLimit = 100000
	// StreamBucketBudget bounds the histogram buckets (and explicit
	// bounds) remembered across all cumulative streams, about 16 bytes
	// each: 32 MiB. k6 streams hold 16 buckets and 15 bounds each.
	StreamBucketBudget = 2 << 20
)

// Options configure a Receiver.
type Options struct {
	MaxBody int64  // 0 = DefaultMaxBody
	Prefix  string // K6_OTEL_METRIC_PREFIX; "" strips "k6_" when present
	// OnRequest is told each request's outcome, the points taken and the
	// error that rejected the request (nil when accepted).
	OnRequest func(outcome string, points int, err error)
	// StreamLimit bounds the cumulative streams remembered (0 =
	// DefaultStreamLimit); points of new streams past it are refused
	// (overflow "streams").
	StreamLimit int
	// OnNewStart is told each new start time of a stream identity already
	// held: another instance with the same resource and attributes, or a
	// restart. Its streams are kept apart and add up.
	OnNewStart func()
	// MaxInFlight bounds the requests decoded at once (each may hold
	// MaxBody bytes decompressed and their decoded form); 0 = no limit.
	MaxInFlight int
	// MaxWireBytes bounds the bytes of OTLP bodies (HTTP and gRPC) being
	// received, over all requests, charged as they arrive, plus
	// RequestCost for each request: a client sending slowly holds only
	// what it has sent, so slow clients cannot take the decoding slots
	// from others, and stalled requests are bounded in number. Past it a
	// request gets 503 with Retry-After (a gRPC call UNAVAILABLE). 0 = no
	// limit.
	MaxWireBytes int64
	// GRPCAuth, when set, checks each gRPC call's authorization header
	// (as HTTP basic auth) before its message is read.
	GRPCAuth func(authorization string) bool
}

// Receiver is the /v1/metrics handler.
type Receiver struct {
	sink Sink
	opts Options

	mu      sync.Mutex
	seed    maphash.Seed
	streams map[uint64]*stream   // by identity and start time (gauges: identity)
	idents  map[uint64]*identity // by identity: resource, metric, attributes
	clock   int64                // unix ns stamped on streams as they are used (Expire)
	cost    int                  // buckets and bounds held by all streams (StreamBucketBudget)
	now     func() time.Time
	slots   chan struct{} // decoding slots; nil = no limit
	wire    atomic.Int64  // OTLP body bytes being received, and RequestCost per request (MaxWireBytes)
}

// acquire takes a decoding slot, waiting up to BusyWait; false: none.
func (rc *Receiver) acquire(ctx context.Context) bool {
	if rc.slots == nil {
		return true
	}
	select {
	case rc.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(BusyWait)
	defer t.Stop()
	select {
	case rc.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// WireBytes is the OTLP body bytes being received, counting RequestCost
// for each request.
func (rc *Receiver) WireBytes() int64 { return rc.wire.Load() }

// InFlight is the number of requests being decoded.
func (rc *Receiver) InFlight() int { return len(rc.slots) }

func (rc *Receiver) release() {
	if rc.slots != nil {
		<-rc.slots
	}
}

// NewReceiver builds a Receiver feeding sink.
func NewReceiver(sink Sink, opts Options) *Receiver {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.OnRequest == nil {
		opts.OnRequest = func(string, int, error) {}
	}
	if opts.OnNewStart == nil {
		opts.OnNewStart = func() {}
	}
	if opts.StreamLimit <= 0 {
		opts.StreamLimit = DefaultStreamLimit
	}
	rc := &Receiver{sink: sink, opts: opts, seed: maphash.MakeSeed(), streams: map[uint64]*stream{}, idents: map[uint64]*identity{}, now: time.Now}
	if opts.MaxInFlight > 0 {
		rc.slots = make(chan struct{}, opts.MaxInFlight)
	}
	return rc
}

// ServeHTTP implements OTLP/HTTP: POST, Content-Type application/x-protobuf
// or application/json, optional gzip Content-Encoding. 413 beyond the
// body limit, 415 for another content type, 400 for an undecodable body,
// 503 with Retry-After when MaxInFlight requests are already decoding.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		rc.fail(w, http.StatusMethodNotAllowed, OutcomeMethod, fmt.Errorf("method %s: OTLP/HTTP takes POST", r.Method))
		return
	}
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	isJSON := ct == "application/json"
	if err != nil || (!isJSON && ct != "application/x-protobuf" && ct != "application/protobuf") {
		rc.fail(w, http.StatusUnsupportedMediaType, OutcomeUnsupportedMedia,
			fmt.Errorf("content type %q: want application/x-protobuf or application/json", r.Header.Get("Content-Type")))
		return
	}
	// The body is received before a decoding slot is taken: a slow
	// client holds only the bytes it sent (MaxWireBytes), never a slot.
	raw, held, status, err := rc.receive(w, r)
	defer rc.wire.Add(-held)
	if err != nil {
		outcome := OutcomeBadRequest
		switch status {
		case http.StatusRequestEntityTooLarge:
			outcome = OutcomeTooLarge
		case http.StatusServiceUnavailable:
			outcome = OutcomeBusy
			w.Header().Set("Retry-After", RetryAfter)
		}
		rc.fail(w, status, outcome, err)
		return
	}
	if !rc.acquire(r.Context()) {
		w.Header().Set("Retry-After", RetryAfter)
		rc.fail(w, http.StatusServiceUnavailable, OutcomeBusy, fmt.Errorf("%d OTLP requests already being decoded; retry later", cap(rc.slots)))
		return
	}
	defer rc.release()
	body, status, err := rc.decompress(raw, r.Header.Get("Content-Encoding"))
	if err != nil {
		outcome := OutcomeBadRequest
		if status == http.StatusRequestEntityTooLarge {
			outcome = OutcomeTooLarge
		}
		rc.fail(w, status, outcome, err)
		return
	}
	// MetricsData is ExportMetricsServiceRequest's twin: the same one
	// field (resource_metrics = 1), so the same bytes and JSON decode.
	req := &metricpb.MetricsData{}
	if isJSON {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, req)
	} else {
		err = proto.Unmarshal(body, req)
	}
	if err != nil {
		rc.fail(w, http.StatusBadRequest, OutcomeBadRequest, fmt.Errorf("decoding OTLP %s body: %w", ct, err))
		return
	}
	rejected, msg := rc.export(req.GetResourceMetrics())
	var out []byte
	if isJSON {
		out = exportResponseJSON(rejected, msg)
		w.Header().Set("Content-Type", "application/json")
	} else {
		out = exportResponse(rejected, msg)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}
	w.WriteHeader(http.StatusOK)
	// The data is ingested and the status sent; a client gone before the
	// body arrives has nothing left to learn from an error here.
	_, _ = w.Write(out)
}

// receive reads an OTLP/HTTP body as sent (compressed or not), up to
// MaxBody bytes, charging each chunk to the wire budget as it arrives.
// held is what it charged, to be given back when the request is done.
func (rc *Receiver) receive(w http.ResponseWriter, r *http.Request) (raw []byte, held int64, status int, err error) {
	if r.ContentLength > rc.opts.MaxBody {
		return nil, 0, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes exceeds the %d-byte limit", r.ContentLength, rc.opts.MaxBody)
	}
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity", "gzip":
	default:
		return nil, 0, http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q: want gzip or none", r.Header.Get("Content-Encoding"))
	}
	return rc.readBody(w, r, rc.opts.MaxBody)
}

// RequestCost is what a request being received holds beyond its bytes
// (its goroutine, the server's request and stream state, the first read
// buffer), charged to the wire budget when its body starts: stalled
// requests are then bounded in number, not only in the bytes they sent.
const RequestCost = 64 << 10

// readBody reads r's body up to limit bytes, charging RequestCost and
// then each chunk to the wire budget as it arrives; held is what it
// charged. The status says why it failed: 413 past limit, 503 past the
// wire budget, 400 a broken read.
func (rc *Receiver) readBody(w http.ResponseWriter, r *http.Request, limit int64) (raw []byte, held int64, status int, err error) {
	if !rc.chargeWire(RequestCost) {
		return nil, 0, http.StatusServiceUnavailable, fmt.Errorf("%d bytes of OTLP requests already being received; retry later", rc.opts.MaxWireBytes)
	}
	held = RequestCost
	src := http.MaxBytesReader(w, r.Body, limit)
	var buf bytes.Buffer
	// The read buffer starts small, so a stalled request holds little,
	// and grows while reads fill it.
	chunk := make([]byte, 4<<10)
	for {
		n, rerr := src.Read(chunk)
		if n > 0 {
			if !rc.chargeWire(int64(n)) {
				return nil, held, http.StatusServiceUnavailable, fmt.Errorf("%d bytes of OTLP requests already being received; retry later", rc.opts.MaxWireBytes)
			}
			held += int64(n)
			buf.Write(chunk[:n])
			if n == len(chunk) && len(chunk) < 32<<10 {
				chunk = make([]byte, 2*len(chunk))
			}
		}
		var mbe *http.MaxBytesError
		switch {
		case rerr == io.EOF:
			return buf.Bytes(), held, 0, nil
		case errors.As(rerr, &mbe):
			return nil, held, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the %d-byte limit", limit)
		case rerr != nil:
			return nil, held, http.StatusBadRequest, fmt.Errorf("reading body: %w", rerr)
		}
	}
}

// chargeWire adds n to the bytes being received; false (nothing added)
// when that would pass MaxWireBytes.
func (rc *Receiver) chargeWire(n int64) bool {
	if lim := rc.opts.MaxWireBytes; lim > 0 && rc.wire.Add(n) > lim {
		rc.wire.Add(-n)
		return false
	}
	if rc.opts.MaxWireBytes <= 0 {
		rc.wire.Add(n)
	}
	return true
}

// decompress undoes the body's content encoding. The body limit also
// bounds the decoded size (a gzip bomb).
func (rc *Receiver) decompress(raw []byte, encoding string) ([]byte, int, error) {
	if !strings.EqualFold(encoding, "gzip") {
		return raw, 0, nil
	}
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
	}
	defer gz.Close() //nolint:errcheck // only read; ReadAll reports a corrupt stream
	// gzip's trailer gives the decoded size (mod 2^32): reading into a
	// buffer of that size, when it is within the limit, spares the
	// doublings of a growing one, up to twice the body held at once. A
	// wrong size only costs the growth again.
	var buf bytes.Buffer
	if n := len(raw); n >= 4 {
		if size := int64(binary.LittleEndian.Uint32(raw[n-4:])); size <= rc.opts.MaxBody {
			buf.Grow(int(size) + bytes.MinRead)
		}
	}
	_, err = buf.ReadFrom(io.LimitReader(gz, rc.opts.MaxBody+1))
	body := buf.Bytes()
	switch {
	case int64(len(body)) > rc.opts.MaxBody:
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the %d-byte limit", rc.opts.MaxBody)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
	}
	return body, 0, nil
}

func (rc *Receiver) fail(w http.ResponseWriter, status int, outcome string, err error) {
	rc.opts.OnRequest(outcome, 0, err)
	http.Error(w, err.Error(), status)
}

// export consumes one export request's resource metrics and reports its
// outcome; it returns what the reply's partial_success carries.
func (rc *Receiver) export(rms []*metricpb.ResourceMetrics) (rejected int, msg string) {
	taken, rejected, msg := rc.Consume(rms)
	outcome := OutcomeOK
	if rejected > 0 {
		outcome = OutcomePartial
	}
	rc.opts.OnRequest(outcome, taken, nil)
	return rejected, msg
}

// exportResponse is the protobuf ExportMetricsServiceResponse: empty
// when every point was taken, else partial_success (1) holding
// rejected_data_points (1) and error_message (2).
func exportResponse(rejected int, msg string) []byte {
	if rejected == 0 {
		return nil
	}
	ps := protowire.AppendTag(nil, 1, protowire.VarintType)
	ps = protowire.AppendVarint(ps, uint64(rejected))
	if msg != "" {
		ps = protowire.AppendTag(ps, 2, protowire.BytesType)
		ps = protowire.AppendString(ps, msg)
	}
	out := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(out, ps)
}

// exportResponseJSON is the same response in OTLP/JSON (protojson's
// names; int64 as a string).
func exportResponseJSON(rejected int, msg string) []byte {
	type partial struct {
		Rejected int64  `json:"rejectedDataPoints,string"`
		Message  string `json:"errorMessage,omitempty"`
	}
	var resp struct {
		Partial *partial `json:"partialSuccess,omitempty"`
	}
	if rejected > 0 {
		resp.Partial = &partial{Rejected: int64(rejected), Message: msg}
	}
	out, _ := json.Marshal(resp) // a struct of strings and numbers cannot fail
	return out
}

// Consume applies one export request's resource metrics; it returns the
// data points taken, those rejected and a message about the first
// rejection.
func (rc *Receiver) Consume(rms []*metricpb.ResourceMetrics) (taken, rejected int, msg string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.clock = rc.now().UnixNano()
	c := &consumer{rc: rc}
	for _, rm := range rms {
		resKey := rc.resourceKey(rm.GetResource().GetAttributes())
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if err := rc.metric(c, resKey, m); err != nil {
					// The whole metric is refused: each of its points.
					c.reject(err.refusal(), max(dataPoints(m), 1))
				}
			}
		}
	}
	rc.sink.Ingested(c.taken, int64(c.newest))
	return c.taken, c.rejected, c.msg
}

// consumer tallies one export request.
type consumer struct {
	rc       *Receiver
	taken    int
	rejected int
	msg      string
	newest   uint64
}

// reject rejects n points in the reply and reports them to the sink,
// which counts them.
func (c *consumer) reject(r *Refusal, n int) {
	c.rejected += n
	if c.msg == "" {
		c.msg = r.Error()
	}
	c.rc.sink.Refuse(r, n)
}

// sinkErr files a Sink error: taken when nil, else rejected.
func (c *consumer) sinkErr(metric string, err error) {
	if err == nil {
		c.taken++
		return
	}
	r := RefusalOf(err)
	c.reject(&Refusal{Reason: r.Reason, Overflow: r.Overflow, Err: &pointError{r.Reason, metric, err.Error(), r.Overflow}}, 1)
}

func dataPoints(m *metricpb.Metric) int {
	switch d := m.GetData().(type) {
	case *metricpb.Metric_Sum:
		return len(d.Sum.GetDataPoints())
	case *metricpb.Metric_Gauge:
		return len(d.Gauge.GetDataPoints())
	case *metricpb.Metric_Histogram:
		return len(d.Histogram.GetDataPoints())
	case *metricpb.Metric_ExponentialHistogram:
		return len(d.ExponentialHistogram.GetDataPoints())
	case *metricpb.Metric_Summary:
		return len(d.Summary.GetDataPoints())
	}
	return 0
}

// pointError says why a metric's data points were skipped.
type pointError struct {
	reason   string
	metric   string
	msg      string
	overflow bool // a limit, not bad input
}

func (e *pointError) refusal() *Refusal {
	return &Refusal{Reason: e.reason, Overflow: e.overflow, Err: e}
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

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// metricIn is one OTLP metric being applied: its k6 name, type of value
// and unit scale, and the export request's tally.
type metricIn struct {
	rc        *Receiver
	c         *consumer
	resKey    uint64
	m         *metricpb.Metric
	name      string
	isRate    bool
	cont      k6.ValueType
	unitScale float64
}

func (rc *Receiver) metric(c *consumer, resKey uint64, m *metricpb.Metric) *pointError {
	name, isRate, ok := rc.name(m.GetName())
	if !ok {
		return &pointError{"prefix", m.GetName(), fmt.Sprintf("name lacks the metric prefix %q", rc.opts.Prefix), false}
	}
	if !utf8.ValidString(name) {
		return &pointError{"invalid_utf8", strings.ToValidUTF8(m.GetName(), "\uFFFD"), "metric name is not valid UTF-8", false}
	}
	x := &metricIn{rc: rc, c: c, resKey: resKey, m: m, name: name, isRate: isRate}
	x.cont, x.unitScale = contains(m.GetUnit())
	switch d := m.GetData().(type) {
	case *metricpb.Metric_Sum:
		return x.sum(d.Sum)
	case *metricpb.Metric_Gauge:
		return x.gauge(d.Gauge)
	case *metricpb.Metric_Histogram:
		return x.histogram(d.Histogram)
	case *metricpb.Metric_ExponentialHistogram:
		return x.exponential(d.ExponentialHistogram)
	}
	return x.perr("unsupported_type", "data type %T is not produced by k6", m.GetData())
}

func (x *metricIn) perr(reason, format string, a ...any) *pointError {
	return &pointError{reason, x.m.GetName(), fmt.Sprintf(format, a...), false}
}

// define declares the metric to the sink; a refusal refuses the metric.
func (x *metricIn) define(typ k6.MetricType) *pointError {
	if err := x.rc.sink.Define(x.name, typ, x.cont); err != nil {
		r := RefusalOf(err)
		return &pointError{r.Reason, x.m.GetName(), err.Error(), r.Overflow}
	}
	return nil
}

// seen notes the newest point time of the request.
func (x *metricIn) seen(t uint64) {
	if t > x.c.newest {
		x.c.newest = t
	}
}

// bad refuses one data point.
func (x *metricIn) bad(reason string, e *pointError) { x.c.reject(Refuse(reason, e), 1) }

// sinkErr files the sink's answer for one data point.
func (x *metricIn) sinkErr(err error) { x.c.sinkErr(x.m.GetName(), err) }

func cumulative(t metricpb.AggregationTemporality) bool {
	return t != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
}

// sum applies a Sum: a k6 rate (".total"), a gauge (not monotonic) or a
// counter.
func (x *metricIn) sum(d *metricpb.Sum) *pointError {
	typ := k6.Counter
	switch {
	case x.isRate:
		typ = k6.Rate
	case !d.GetIsMonotonic():
		typ = k6.Gauge
	}
	if e := x.define(typ); e != nil {
		return e
	}
	cum := cumulative(d.GetAggregationTemporality())
	for _, dp := range d.GetDataPoints() {
		x.sumPoint(dp, typ, cum)
	}
	return nil
}

func (x *metricIn) sumPoint(dp *metricpb.NumberDataPoint, typ k6.MetricType, cum bool) {
	v := number(dp)
	if !finite(v) || !finite(v*x.unitScale) {
		x.bad("bad_value", x.perr("bad_value", "value %v", v))
		return
	}
	tags, cond := tagsOf(dp.GetAttributes())
	if typ == k6.Gauge {
		if !x.gaugeFresh(dp.GetAttributes(), dp.GetTimeUnixNano()) {
			return
		}
		x.seen(dp.GetTimeUnixNano())
		x.sinkErr(x.rc.sink.SetGauge(x.name, tags, v*x.unitScale))
		return
	}
	delta := v
	if cum {
		st := x.stream(dp.GetAttributes(), dp.GetStartTimeUnixNano(), dp.GetTimeUnixNano())
		if st == nil {
			return
		}
		if st.used && v < st.value {
			// Same start time, lower value: an earlier export
			// arriving late. Only a new start time is a reset.
			x.bad("late_point", x.perr("late_point", "cumulative value %v below %v already seen for the same start time", v, st.value))
			return
		}
		if st.used {
			delta = v - st.value
		}
		st.value, st.used = v, true
	}
	if delta < 0 {
		// A monotonic sum never goes down.
		x.bad("bad_value", x.perr("bad_value", "negative increment %v of a monotonic sum", delta))
		return
	}
	x.seen(dp.GetTimeUnixNano())
	if typ == k6.Rate {
		if delta > MaxRate || delta != math.Trunc(delta) {
			x.bad("bad_value", x.perr("bad_value", "rate count %v is not a whole number below 2^53", delta))
			return
		}
		if cond == "nonzero" {
			x.sinkErr(x.rc.sink.AddRate(x.name, tags, 0, uint64(delta)))
		} else {
			x.sinkErr(x.rc.sink.AddRate(x.name, tags, uint64(delta), 0))
		}
		return
	}
	x.sinkErr(x.rc.sink.AddCounter(x.name, tags, delta*x.unitScale))
}

func (x *metricIn) gauge(d *metricpb.Gauge) *pointError {
	if e := x.define(k6.Gauge); e != nil {
		return e
	}
	for _, dp := range d.GetDataPoints() {
		v := number(dp) * x.unitScale
		if !finite(v) {
			x.bad("bad_value", x.perr("bad_value", "gauge value %v", number(dp)))
			continue
		}
		if !x.gaugeFresh(dp.GetAttributes(), dp.GetTimeUnixNano()) {
			continue
		}
		tags, _ := tagsOf(dp.GetAttributes())
		x.seen(dp.GetTimeUnixNano())
		x.sinkErr(x.rc.sink.SetGauge(x.name, tags, v))
	}
	return nil
}

func (x *metricIn) histogram(d *metricpb.Histogram) *pointError {
	if e := x.define(k6.Trend); e != nil {
		return e
	}
	cum := cumulative(d.GetAggregationTemporality())
	for _, dp := range d.GetDataPoints() {
		x.histogramPoint(dp, cum)
	}
	return nil
}

func (x *metricIn) histogramPoint(dp *metricpb.HistogramDataPoint, cum bool) {
	if e := checkHistogram(dp, x.unitScale); e != "" {
		x.bad("bad_histogram", x.perr("bad_histogram", "%s", e))
		return
	}
	bounds, counts := dp.GetExplicitBounds(), dp.GetBucketCounts()
	tags, _ := tagsOf(dp.GetAttributes())
	dc, dsum := slices.Clone(counts), dp.GetSum()
	if cum {
		st := x.histStream(dp.GetAttributes(), dp.GetStartTimeUnixNano(), dp.GetTimeUnixNano(), dp.GetCount(), len(counts)+len(bounds))
		if st == nil {
			return
		}
		prevSum, prevCounts, prevBounds, used := st.sum, st.buckets, st.bounds, st.used
		st.used = true
		st.count, st.sum, st.buckets, st.bounds = dp.GetCount(), dp.GetSum(), slices.Clone(counts), slices.Clone(bounds)
		if used {
			// Buckets of two layouts cannot be told apart: the point
			// becomes the baseline and only its increment is lost.
			if !slices.Equal(bounds, prevBounds) {
				x.bad("bounds_changed", x.perr("bounds_changed", "explicit bounds changed from %v to %v with the same start time", prevBounds, bounds))
				return
			}
			for i := range dc {
				if counts[i] < prevCounts[i] {
					x.bad("not_monotonic", x.perr("not_monotonic", "bucket %d went down from %d to %d with the same start time", i, prevCounts[i], counts[i]))
					return
				}
				dc[i] = counts[i] - prevCounts[i]
			}
			dsum -= prevSum
		}
	}
	values := make([]float64, len(dc))
	for i := range dc {
		values[i] = representative(bounds, i, dp) * x.unitScale
	}
	x.seen(dp.GetTimeUnixNano())
	x.sinkErr(x.rc.sink.AddBuckets(x.name, tags, values, dc, dsum*x.unitScale))
}

func (x *metricIn) exponential(d *metricpb.ExponentialHistogram) *pointError {
	if e := x.define(k6.Trend); e != nil {
		return e
	}
	cum := cumulative(d.GetAggregationTemporality())
	for _, dp := range d.GetDataPoints() {
		x.exponentialPoint(dp, cum)
	}
	return nil
}

func (x *metricIn) exponentialPoint(dp *metricpb.ExponentialHistogramDataPoint, cum bool) {
	if e := checkExponential(dp, x.unitScale); e != "" {
		x.bad("bad_histogram", x.perr("bad_histogram", "%s", e))
		return
	}
	tags, _ := tagsOf(dp.GetAttributes())
	cur := expPointOf(dp)
	delta, dsum := cur, dp.GetSum()
	if cum {
		st := x.histStream(dp.GetAttributes(), dp.GetStartTimeUnixNano(), dp.GetTimeUnixNano(), dp.GetCount(), cur.buckets())
		if st == nil {
			return
		}
		prev, prevSum, used := st.exp, st.sum, st.used
		st.used = true
		st.count, st.sum, st.exp = dp.GetCount(), dp.GetSum(), cur
		if used && prev != nil {
			var ok bool
			if delta, ok = expDiff(prev, cur); !ok {
				// The point becomes the baseline: the next one applies
				// from it, and only this one's increment is lost.
				x.bad("not_monotonic", x.perr("not_monotonic", "exponential buckets at scale %d are not a later state of those at scale %d with the same start time", cur.scale, prev.scale))
				return
			}
			dsum -= prevSum
		}
	}
	values, counts, ok := delta.values(x.unitScale)
	if !ok {
		x.bad("bad_histogram", x.perr("bad_histogram", "bucket beyond the float64 range at scale %d", dp.GetScale()))
		return
	}
	x.seen(dp.GetTimeUnixNano())
	x.sinkErr(x.rc.sink.AddBuckets(x.name, tags, values, counts, dsum*x.unitScale))
}

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

// hashAttrs writes attrs to h in key order, so that their order in the
// request does not matter. It builds no string of them: an attribute can
// be as large as the body, and a joined copy would double what a request
// holds while it is decoded.
func hashAttrs(h *maphash.Hash, attrs []*commonpb.KeyValue) {
	order := make([]int, len(attrs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := strings.Compare(attrs[a].GetKey(), attrs[b].GetKey()); c != 0 {
			return c
		}
		return strings.Compare(anyString(attrs[a].GetValue()), anyString(attrs[b].GetValue()))
	})
	for _, i := range order {
		h.WriteString(attrs[i].GetKey())
		h.WriteByte(0xfe)
		h.WriteString(anyString(attrs[i].GetValue()))
		h.WriteByte(0xff)
	}
}

// resourceKey identifies a resource by its attributes.
func (rc *Receiver) resourceKey(attrs []*commonpb.KeyValue) uint64 {
	var h maphash.Hash
	h.SetSeed(rc.seed)
	hashAttrs(&h, attrs)
	return h.Sum64()
}
