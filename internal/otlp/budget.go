package otlp

// Admission: the wire budget charged as bodies arrive, and the decoding
// slots a received request waits for.

import (
	"context"
	"time"
)

// BusyWait is how long a request waits for a decoding slot before it is
// refused with 503 (gRPC: UNAVAILABLE) and a Retry-After of RetryAfter.
const (
	BusyWait   = 500 * time.Millisecond
	RetryAfter = "1"
)

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

func (rc *Receiver) release() {
	if rc.slots != nil {
		<-rc.slots
	}
}

// RequestCost is what a request being received holds beyond the chunks
// its body is read into (its goroutine, the server's request and stream
// state), charged to the wire budget when its body starts: stalled
// requests are then bounded in number, not only in the bytes they sent.
const RequestCost = 64 << 10

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
