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

// The bar is drawn while loading and cleared at the end.
func TestProgressDrawsAndClears(t *testing.T) {
	var buf bytes.Buffer
	c := &countingReader{}
	c.n.Store(10)
	stop := startProgress(&buf, "f", 100, c)
	time.Sleep(250 * time.Millisecond)
	stop()
	out := buf.String()
	if !strings.Contains(out, " 10%") || !strings.HasSuffix(out, "\r") {
		t.Errorf("progress output %q", out)
	}
}
