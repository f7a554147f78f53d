package exporter

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A flood of bad input logs once per interval and reason, then says how
// many were suppressed.
func TestRateLog(t *testing.T) {
	var buf bytes.Buffer
	rl := newRateLog(slog.New(slog.NewTextHandler(&buf, nil)), 50*time.Millisecond)
	for range 100 {
		rl.warn("malformed", "bad line")
	}
	rl.warn("unknown_metric", "unknown")
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d log lines, want 2 (one per reason):\n%s", n, buf.String())
	}
	time.Sleep(60 * time.Millisecond)
	rl.warn("malformed", "bad line")
	last := buf.String()[strings.LastIndex(strings.TrimSpace(buf.String()), "\n")+1:]
	if !strings.Contains(last, "suppressed_since_last=99") {
		t.Errorf("last line %q lacks the suppressed count", last)
	}
}
