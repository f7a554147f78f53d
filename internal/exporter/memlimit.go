package exporter

import (
	"os"
	"runtime/debug"
)

// DefaultMemoryLimit is the Go runtime's soft memory limit that
// `exporter serve` sets by default. The series, bucket and OTLP budgets
// bound what the exporter holds live; this bounds the garbage
// collector's headroom above it, which by default lets the heap grow to
// twice the live memory before a collection (so 50 decoded 16 MiB OTLP
// bombs peaked at 312 MiB without it). With the widest histograms
// scraped under the same bombs, the peak stays below 256 MiB only when
// the collector starts early enough: 192 MiB leaves room for the
// decoding slots and a scrape above what the budgets hold. It is soft:
// past it the collector works harder, never refuses memory.
const DefaultMemoryLimit = 192 << 20

// SetMemoryLimit sets the runtime's soft memory limit to limit bytes,
// unless the GOMEMLIMIT environment variable sets one (which wins); 0 or
// less leaves the runtime's own. It returns the limit in force.
func SetMemoryLimit(limit int64) int64 {
	if os.Getenv("GOMEMLIMIT") != "" || limit <= 0 {
		return debug.SetMemoryLimit(-1)
	}
	debug.SetMemoryLimit(limit)
	return limit
}
