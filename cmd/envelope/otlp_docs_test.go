package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// The k6 OTLP commands of the README and docs/exporter.md carry the
// setting that makes k6 send exponential histograms: without it k6's
// default explicit buckets make coarse quantiles.
func TestReadmeK6OTLPCommandsExponential(t *testing.T) {
	for _, doc := range []string{"README.md", "docs/exporter.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		n := 0
		for _, proto := range []string{"K6_OTEL_HTTP_EXPORTER_ENDPOINT=", "K6_OTEL_GRPC_EXPORTER_ENDPOINT="} {
			for i := strings.Index(s, proto); i >= 0; i = next(s, proto, i) {
				// The command: up to the next blank line or closing backtick.
				end := len(s)
				for _, stop := range []string{"\n\n", "`"} {
					if j := strings.Index(s[i:], stop); j >= 0 && i+j < end {
						end = i + j
					}
				}
				cmd := s[i:end]
				if strings.Contains(cmd, "k6 run") || strings.Contains(cmd, "INSECURE") {
					n++
					if !strings.Contains(cmd, otlp.ExponentialSetting) {
						t.Errorf("%s: k6 OTLP command without %s: %q", doc, otlp.ExponentialSetting, cmd)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no k6 OTLP command found", doc)
		}
	}
}

func next(s, sub string, i int) int {
	j := strings.Index(s[i+1:], sub)
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// docs/deploy.md shows what `envelope stack` prints: its k6 lines are the
// commands the stack prints at its default addresses, OTLP/gRPC included.
func TestDocsStackK6Commands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"k6, OTLP/HTTP: " + otlp.K6Command(false, "127.0.0.1:"+exporter.DefaultPort, stackK6Script),
		"k6, OTLP/gRPC: " + otlp.K6Command(true, stackGRPCAddr, stackK6Script),
	} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("docs/deploy.md does not show the line envelope stack prints: %q", want)
		}
	}
}
