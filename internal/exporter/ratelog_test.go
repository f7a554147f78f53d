package exporter

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/otlp"
)

// A flood of bad input logs once per interval and reason, then says how
// many were suppressed. The clock is the test's.
func TestRateLog(t *testing.T) {
	var buf bytes.Buffer
	rl := newRateLog(slog.New(slog.NewTextHandler(&buf, nil)), 50*time.Millisecond)
	clock := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	rl.now = func() time.Time { return clock }
	for range 100 {
		rl.warn("malformed", "bad line")
	}
	rl.warn("unknown_metric", "unknown")
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d log lines, want 2 (one per reason):\n%s", n, buf.String())
	}
	clock = clock.Add(49 * time.Millisecond) // still inside the interval
	rl.warn("malformed", "bad line")
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d log lines after 49ms, want 2", n)
	}
	clock = clock.Add(11 * time.Millisecond)
	rl.warn("malformed", "bad line")
	last := buf.String()[strings.LastIndex(strings.TrimSpace(buf.String()), "\n")+1:]
	if !strings.Contains(last, "suppressed_since_last=100") {
		t.Errorf("last line %q lacks the suppressed count", last)
	}
}

// A bad-input line names each attribute once: the reason the input was
// refused, its source, the error.
func TestBadInputLogNamesEachKeyOnce(t *testing.T) {
	var buf bytes.Buffer
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.refuse(SourceResults, otlp.Refuse("bad_value", errors.New(`metric "x": value NaN`)), 1)
	line := buf.String()
	for _, k := range []string{"reason=", "source=", "err="} {
		if n := strings.Count(line, " "+k); n != 1 {
			t.Errorf("%q appears %d times in %q", k, n, line)
		}
	}
	if !strings.Contains(line, "reason=bad_value") {
		t.Errorf("line %q lacks reason=bad_value", line)
	}
}
