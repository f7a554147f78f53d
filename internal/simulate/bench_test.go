package simulate

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
)

// BenchmarkSixMinutes simulates a 6-minute run of the demo envelope
// (about 20 000 requests, 84 000 NDJSON lines).
func BenchmarkSixMinutes(b *testing.B) {
	env, err := envelopeForBench()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := write(io.Discard, env, Options{Duration: 6 * time.Minute, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func envelopeForBench() (*envelope.Envelope, error) {
	return envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
}
