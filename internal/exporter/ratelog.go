package exporter

import (
	"log/slog"
	"sync"
	"time"
)

// rateLog logs malformed input at most once per interval per reason and
// says how many were suppressed, so a stream of bad lines cannot flood
// the log or slow ingestion.
type rateLog struct {
	log      *slog.Logger
	interval time.Duration
	mu       sync.Mutex
	last     map[string]time.Time
	dropped  map[string]int
	now      func() time.Time // time.Now; tests set their own clock
}

func newRateLog(l *slog.Logger, interval time.Duration) *rateLog {
	return &rateLog{log: l, interval: interval, last: map[string]time.Time{}, dropped: map[string]int{}, now: time.Now}
}

func (r *rateLog) warn(reason, msg string, args ...any) {
	now := r.now()
	r.mu.Lock()
	if now.Sub(r.last[reason]) < r.interval {
		r.dropped[reason]++
		r.mu.Unlock()
		return
	}
	n := r.dropped[reason]
	r.dropped[reason] = 0
	r.last[reason] = now
	r.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed_since_last", n)
	}
	r.log.Warn(msg, append([]any{"reason", reason}, args...)...)
}
