package report

import (
	"path/filepath"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
)

// BenchmarkWriteEnvelopeReport renders the demo report with its eight PNGs.
func BenchmarkWriteEnvelopeReport(b *testing.B) {
	env, err := demo.Envelope()
	if err != nil {
		b.Fatal(err)
	}
	md := filepath.Join(b.TempDir(), "report.md")
	for b.Loop() {
		if err := WriteEnvelopeReport(env, md); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnvelopeMarkdown is the text alone, without charts.
func BenchmarkEnvelopeMarkdown(b *testing.B) {
	env, err := demo.Envelope()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EnvelopeMarkdown(env, nil); err != nil {
			b.Fatal(err)
		}
	}
}
