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

// warn logs msg with args unless a line of the same key was logged
// within the interval. The key only groups lines; args say the reason.
func (r *rateLog) warn(key, msg string, args ...any) {
	now := r.now()
	r.mu.Lock()
	if now.Sub(r.last[key]) < r.interval {
		r.dropped[key]++
		r.mu.Unlock()
		return
	}
	n := r.dropped[key]
	r.dropped[key] = 0
	r.last[key] = now
	r.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed_since_last", n)
	}
	r.log.Warn(msg, args...)
}
