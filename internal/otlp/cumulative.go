package otlp

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// The cumulative state: what the receiver remembers of every data point
// stream to turn cumulative points into increments.
//
// A stream's identity is its resource, metric and attributes. k6 sends
// the same resource from every instance, so two instances with the same
// tags share an identity and differ only by their start time: each
// (identity, start time) is its own stream with its own cumulative
// state, and their increments add up. A point older than the latest
// start time of its identity comes from before a restart (a retry sent
// late): it never adds, as its stream may have been forgotten and would
// count its whole total again.

// stream is the last cumulative state of one data point stream, or for a
// gauge the time of the value held.
type stream struct {
	ident   uint64 // identity key, in Receiver.idents
	seen    int64  // last use, Receiver.clock
	value   float64
	count   uint64
	sum     float64
	buckets []uint64  // explicit histogram counts
	bounds  []float64 // their bounds, to detect a layout change
	exp     *expPoint // exponential histogram layout and counts
	time    uint64    // gauges: the newest point's time
	used    bool      // a point was taken: value/count are a baseline
	cost    int       // buckets and bounds held
}

// identity is what the streams of one identity share.
type identity struct {
	latest  uint64 // newest start time seen
	streams int    // streams held with this identity
}

// charge accounts a stream's new state of n buckets and bounds; false
// (nothing charged) when it would grow past StreamBucketBudget.
func (rc *Receiver) charge(st *stream, n int) bool {
	d := n - st.cost
	if d > 0 && rc.cost+d > StreamBucketBudget {
		return false
	}
	rc.cost += d
	st.cost = n
	return true
}

// Expire forgets the cumulative streams not used since before, and the
// explicit-bucket identities noted without a point since; it returns how
// many streams. A stream seen again later starts from its next
// point's full value, as a new stream.
func (rc *Receiver) Expire(before time.Time) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for k, st := range rc.streams {
		if st.seen < before.UnixNano() {
			rc.forget(k, st)
			n++
		}
	}
	rc.expireExplicit(before.UnixNano())
	return n
}

func (rc *Receiver) forget(k uint64, st *stream) {
	rc.cost -= st.cost
	delete(rc.streams, k)
	if id := rc.idents[st.ident]; id != nil {
		if id.streams--; id.streams <= 0 {
			delete(rc.idents, st.ident)
		}
	}
}

// Stream refusals: why a point found no stream to apply to.
const (
	refuseStreams       = "streams"        // over the stream limit (an overflow)
	refuseBeforeRestart = "before_restart" // older than its identity's latest start
)

// identityKey hashes a stream's identity: resource, metric, attributes.
func (rc *Receiver) identityKey(resKey uint64, metric string, attrs []*commonpb.KeyValue) uint64 {
	var h maphash.Hash
	h.SetSeed(rc.seed)
	var rk [8]byte
	binary.LittleEndian.PutUint64(rk[:], resKey)
	_, _ = h.Write(rk[:]) // a maphash.Hash write cannot fail
	h.WriteString(metric)
	h.WriteByte(0)
	hashAttrs(&h, attrs)
	return h.Sum64()
}

// streamKey is the key of the stream of an identity and start time.
func (rc *Receiver) streamKey(ident, start uint64) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], ident)
	binary.LittleEndian.PutUint64(b[8:], start)
	return maphash.Bytes(rc.seed, b[:])
}

// stream finds or creates the state of the stream of ident and start for
// a point taken at time t; refused says why there is none.
func (rc *Receiver) stream(ident, key, start, t uint64) (st *stream, refused string) {
	id := rc.idents[ident]
	if id != nil && start < id.latest && t < id.latest {
		return nil, refuseBeforeRestart
	}
	st = rc.streams[key]
	if st == nil {
		if rc.opts.StreamLimit > 0 && len(rc.streams) >= rc.opts.StreamLimit {
			return nil, refuseStreams
		}
		if id == nil {
			id = &identity{}
			rc.idents[ident] = id
		} else {
			rc.opts.OnNewStart()
		}
		id.streams++
		id.latest = max(id.latest, start)
		st = &stream{ident: ident}
		rc.streams[key] = st
	}
	st.seen = rc.clock
	return st, ""
}

// stream finds the cumulative state of a data point's stream; nil when
// the point must not be applied (counted: over the stream limit, or from
// before a restart).
func (x *metricIn) stream(attrs []*commonpb.KeyValue, start, t uint64) *stream {
	ident := x.rc.identityKey(x.resKey, x.m.GetName(), attrs)
	st, refused := x.rc.stream(ident, x.rc.streamKey(ident, start), start, t)
	switch refused {
	case refuseStreams:
		x.sinkErr(x.rc.dropStream())
	case refuseBeforeRestart:
		x.bad(refuseBeforeRestart, x.perr(refuseBeforeRestart, "point at %d ns is older than the latest start time %d ns of its stream", t, x.rc.idents[ident].latest))
	}
	return st
}

// histStream is a cumulative histogram point's stream, ready to take a
// state of cost buckets; nil when the point must not be applied: over the
// stream limit or the bucket budget (counted as drops), from before a
// restart, or late, a count below one already seen for the same start
// time (counted as bad).
func (x *metricIn) histStream(attrs []*commonpb.KeyValue, start, t, count uint64, cost int) *stream {
	st := x.stream(attrs, start, t)
	if st == nil {
		return nil
	}
	if st.used && count < st.count {
		x.bad("late_point", x.perr("late_point", "cumulative count %d below %d already seen for the same start time", count, st.count))
		return nil
	}
	if !x.rc.charge(st, cost) {
		x.sinkErr(x.rc.dropStream())
		return nil
	}
	return st
}

// gaugeFresh says whether a gauge point at time t is at least as new as
// the value held for its identity, and notes its time; an older one is
// refused (counted as late), so exports arriving out of order never put
// an older value back.
func (x *metricIn) gaugeFresh(attrs []*commonpb.KeyValue, t uint64) bool {
	ident := x.rc.identityKey(x.resKey, x.m.GetName(), attrs)
	st, refused := x.rc.stream(ident, ident, 0, t)
	if refused != "" {
		// Past the stream limit a gauge is still taken: its value is
		// replaced, never added, so it cannot be counted twice.
		return true
	}
	if st.used && t < st.time {
		x.bad("late_point", x.perr("late_point", "gauge point at %d ns is older than the value held, at %d ns", t, st.time))
		return false
	}
	st.used, st.time = true, t
	return true
}

// dropStream refuses a point whose new stream would pass the limit.
func (rc *Receiver) dropStream() error {
	return Overflow(refuseStreams, fmt.Errorf("over the limit of %d cumulative streams or %d stream buckets", rc.opts.StreamLimit, StreamBucketBudget))
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
