// Package otlptest holds what tests of the OTLP receiver and of the
// exporter that serves it share.
package otlptest

import (
	"bytes"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
)

// Receiving counts the goroutines reading an OTLP body: the requests
// being received.
func Receiving(tb testing.TB) int {
	tb.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		tb.Fatal(err)
	}
	total := 0
	_, records, _ := strings.Cut(b.String(), "\n") // past the header line
	for _, rec := range strings.Split(records, "\n\n") {
		if !strings.Contains(rec, "otlp.(*Receiver).readBody") {
			continue
		}
		count, _, _ := strings.Cut(rec, " @")
		k, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil {
			tb.Fatalf("goroutine profile record %.80q: %v", rec, err)
		}
		total += k
	}
	return total
}
