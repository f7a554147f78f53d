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
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

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
	// OutcomeTimeout is a body that did not arrive within the server's
	// read timeout: a slow client, not a malformed request.
	OutcomeTimeout = "timeout"
)

// Outcomes lists the outcomes a request's handling ends in (a timeout is
// the server's, counted as it happens); a fresh slice each call.
func Outcomes() []string {
	return []string{OutcomeOK, OutcomePartial, OutcomeBadRequest, OutcomeTooLarge, OutcomeUnsupportedMedia, OutcomeMethod, OutcomeBusy, OutcomeUnauthorized}
}

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
	// StreamLimit bounds the cumulative streams remembered (0 = no
	// limit; StreamBucketBudget still bounds their buckets); points of
	// new streams past it are refused (overflow "streams").
	StreamLimit int
	// OnNewStart is told each new start time of a stream identity already
	// held: another instance with the same resource and attributes, or a
	// restart. Its streams are kept apart and add up.
	OnNewStart func()
	// OnExplicitBuckets is told once per histogram stream identity that
	// sends explicit buckets (k6's default aggregation): quantiles from
	// them are only as fine as the bounds. It is called with the
	// receiver's lock held.
	OnExplicitBuckets func(ExplicitBuckets)
	// MaxInFlight bounds the requests decoded at once (each may hold
	// MaxBody bytes decompressed and their decoded form); 0 = no limit.
	MaxInFlight int
	// MaxWireBytes bounds the memory of OTLP bodies (HTTP and gRPC)
	// being received, over all requests: the chunks they are read into,
	// charged as they are allocated, plus RequestCost for each request
	// (Held): a client sending slowly holds only what it has sent and the
	// chunk being filled, so slow clients cannot take the decoding slots
	// from others, and stalled requests are bounded in number. Past it a
	// request gets 503 with Retry-After (a gRPC call UNAVAILABLE). 0 = no
	// limit.
	MaxWireBytes int64
	// Memory, when set, is the account those bytes are charged to, with
	// its own limit in place of MaxWireBytes: others sharing it (the
	// exporter's scrapes) and the bodies then have one bound.
	Memory *Memory
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
	wire    *Memory       // OTLP body bytes being received, and RequestCost per request (Options.Memory)

	// explicit notes the histogram identities sending explicit buckets,
	// explicitBy counts them per k6 metric (resolution.go).
	explicit   map[uint64]*explicitStream
	explicitBy map[string]int
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
	if opts.OnExplicitBuckets == nil {
		opts.OnExplicitBuckets = func(ExplicitBuckets) {}
	}
	if opts.Memory == nil {
		opts.Memory = NewMemory(opts.MaxWireBytes)
	}
	rc := &Receiver{sink: sink, opts: opts, seed: maphash.MakeSeed(), streams: map[uint64]*stream{}, idents: map[uint64]*identity{}, now: time.Now,
		wire: opts.Memory, explicit: map[uint64]*explicitStream{}, explicitBy: map[string]int{}}
	if opts.MaxInFlight > 0 {
		rc.slots = make(chan struct{}, opts.MaxInFlight)
	}
	return rc
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
