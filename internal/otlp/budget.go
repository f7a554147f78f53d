package otlp

// Admission: the wire budget charged as bodies arrive, and the decoding
// slots a received request waits for.

import (
	"context"
	"sync/atomic"
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
// when that would pass the memory account's limit.
func (rc *Receiver) chargeWire(n int64) bool { return rc.wire.Charge(n) }

// Memory is a byte account with a limit. The OTLP bodies being received
// charge it (Options.Memory); whoever else shares it (the exporter's
// scrapes) charges it too, so one bound covers them together.
type Memory struct {
	limit int64 // <= 0: no limit
	used  atomic.Int64
}

// NewMemory returns an account of limit bytes; 0 or less: no limit.
func NewMemory(limit int64) *Memory { return &Memory{limit: limit} }

// Charge adds n unless that would pass the limit; false: nothing added.
func (m *Memory) Charge(n int64) bool {
	if used := m.used.Add(n); m.limit > 0 && used > m.limit {
		m.used.Add(-n)
		return false
	}
	return true
}

// Add adds n (negative: gives bytes back) whatever the limit, and
// returns the bytes held.
func (m *Memory) Add(n int64) int64 { return m.used.Add(n) }

// Load returns the bytes held.
func (m *Memory) Load() int64 { return m.used.Load() }

// Limit returns the account's limit (0 or less: none).
func (m *Memory) Limit() int64 { return m.limit }
