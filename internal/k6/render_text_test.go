package k6

import (
	"bytes"
	"strings"
	"testing"
)

// The METRIC column is as wide as the longest metric name, not as the
// file name printed in the title line above it.
func TestWriteTextColumnsIgnoreTitle(t *testing.T) {
	for _, source := range []string{"a.json", strings.Repeat("very/long/directory/", 6) + "run.json"} {
		r := &Run{Source: source, Format: FormatSummaryExport, Mode: "summary", Metrics: map[string]*Metric{
			"http_reqs": {Type: Counter, Contains: "default", Values: map[string]float64{"count": 3, "rate": 1}},
		}}
		var b bytes.Buffer
		if err := WriteText(&b, []*Run{r}, nil); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(l, "  http_reqs") {
				// "  http_reqs" then the 2-space column gap; longest cell is "http_reqs".
				if got := strings.Index(l, "counter"); got > len("  http_reqs")+2+len("METRIC") {
					t.Fatalf("source %q: TYPE column starts at %d:\n%s", source, got, b.String())
				}
			}
		}
	}
}
