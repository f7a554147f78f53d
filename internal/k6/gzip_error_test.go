package k6

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// A gzip stream cut short must be reported as a broken gzip stream, not as
// a parse error of whatever partial line the cut left behind.
func TestTruncatedGzipIsReadError(t *testing.T) {
	plain, err := os.ReadFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full := gz.Bytes()
	for _, tc := range []struct {
		name string
		cut  int
	}{
		{"mid-stream", len(full) / 2},
		{"no trailer", len(full) - 4},
		{"just past header", 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, workers := range []int{1, 2} {
				_, err := LoadReader("run.ndjson.gz", bytes.NewReader(full[:tc.cut]), LoadOptions{Workers: workers})
				if err == nil {
					t.Fatalf("workers=%d: truncated gzip loaded without error", workers)
				}
				if !strings.Contains(err.Error(), "run.ndjson.gz") || !strings.Contains(err.Error(), "broken gzip stream") {
					t.Fatalf("workers=%d: error %q does not name the file and the broken gzip stream", workers, err)
				}
				// ... and where it breaks: the line of the unpacked text
				// the cut falls in.
				if want := fmt.Sprintf("cut short in line %d of the unpacked text", unpackedLines(full[:tc.cut])+1); !strings.Contains(err.Error(), want) {
					t.Fatalf("workers=%d: error %q lacks %q", workers, err, want)
				}
			}
		})
	}
	// The intact stream still loads.
	if _, err := LoadReader("run.ndjson.gz", bytes.NewReader(full), LoadOptions{}); err != nil {
		t.Fatalf("intact gzip: %v", err)
	}
}

// unpackedLines counts the newlines a cut gzip stream unpacks to.
func unpackedLines(cut []byte) int {
	zr, err := gzip.NewReader(bytes.NewReader(cut))
	if err != nil {
		return 0
	}
	b, _ := io.ReadAll(zr) // the error is the cut
	return bytes.Count(b, []byte("\n"))
}
