package k6

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	got := progressLine("run.ndjson", 50e6, 200e6)
	if !strings.HasPrefix(got, "\rrun.ndjson") || !strings.Contains(got, " 25%") || !strings.Contains(got, "50.0/200.0 MB") ||
		strings.Count(got, "=") != 7 {
		t.Errorf("progressLine = %q", got)
	}
	if got := progressLine("x", 300, 200); !strings.Contains(got, "100%") {
		t.Errorf("over-read: %q", got)
	}
}

// The bar is drawn on each tick while loading and cleared at the end;
// the test sends the ticks, so it waits on no clock.
func TestProgressDrawsAndClears(t *testing.T) {
	var buf bytes.Buffer
	c := &countingReader{}
	c.n.Store(10)
	ticks := make(chan time.Time)
	stop := drawProgress(&buf, "f", 100, c, ticks)
	ticks <- time.Time{} // unbuffered: the draw has begun when this returns
	c.n.Store(60)
	ticks <- time.Time{}
	stop()
	out := buf.String()
	if !strings.Contains(out, " 10%") || !strings.Contains(out, " 60%") || !strings.HasSuffix(out, "\r") {
		t.Errorf("progress output %q", out)
	}
	// Nothing drawn, nothing to clear.
	buf.Reset()
	drawProgress(&buf, "f", 100, c, make(chan time.Time))()
	if buf.Len() != 0 {
		t.Errorf("output without a tick: %q", buf.String())
	}
}
