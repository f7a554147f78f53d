package exporter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/envelope-dev/envelope/internal/k6"
)

// liveHeap is the heap's objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// wideTags are the seven default k6 labels of series i, each value n
// bytes long.
func wideTags(i, n int) map[string]string {
	tags := map[string]string{}
	for _, l := range []string{"testid", "scenario", "name", "method", "status", "expected_response", "group"} {
		v := fmt.Sprintf("%s-%06d-", l, i)
		tags[l] = v + strings.Repeat("x", n-len(v))
	}
	return tags
}

// A label value is judged at the length it is stored with: each invalid
// byte is replaced by U+FFFD (three bytes) first, so a value of 512
// invalid bytes between letters, 1,024 bytes as sent, is 2,048 once
// repaired.
func TestLabelValueRepairedBeforeLengthCheck(t *testing.T) {
	for _, tc := range []struct {
		pairs    int    // "\xffa" pairs in the name tag
		reason   string // the bad_lines_total reason counted
		storedAs int    // bytes of the stored value; 0: refused
	}{
		{pairs: 200, reason: "invalid_utf8", storedAs: 800},
		{pairs: 300, reason: "label_too_long"}, // 600 bytes sent, 1,200 repaired
		{pairs: 512, reason: "label_too_long"}, // 1,024 bytes sent, 2,048 repaired
	} {
		t.Run(fmt.Sprint(tc.pairs), func(t *testing.T) {
			s, err := New(DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: map[string]string{"testid": "t", "name": strings.Repeat("\xffa", tc.pairs)}})
			if got := testutil.ToFloat64(s.bad.WithLabelValues(SourceAPI, tc.reason)); got != 1 {
				t.Errorf("bad_lines_total{reason=%q} = %v, want 1", tc.reason, got)
			}
			if got, want := s.st.nseries.Load(), min(int64(tc.storedAs), 1); got != want {
				t.Fatalf("%d series stored, want %d", got, want)
			}
			for _, f := range s.st.sortedFamilies() {
				for _, ser := range f.snapshot() {
					for i, l := range f.labels {
						if l == "name" && len(ser.values[i]) != tc.storedAs {
							t.Errorf("stored name value of %d bytes, want %d", len(ser.values[i]), tc.storedAs)
						}
						if len(ser.values[i]) > defaultMaxLabelValue {
							t.Errorf("stored %s value of %d bytes, over the %d-byte limit", l, len(ser.values[i]), defaultMaxLabelValue)
						}
					}
				}
			}
		})
	}
}

// A series holds its label bytes once: 1,000 series of seven 1,000-byte
// labels (7 MB of values) grow the heap by less than twice that (the
// key's allocation rounds up, each series has its label pairs). Kept as
// the key, the map key, a sort key and the value list, they took four
// times that.
func TestLabelBytesHeldOnce(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LabelBytesLimit = 0
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const series, width = 1000, 1000
	before := liveHeap()
	for i := range series {
		s.IngestPoint(&k6.Point{Metric: "http_reqs", Value: 1, Tags: wideTags(i, width)})
	}
	if got := s.st.nseries.Load(); got != series {
		t.Fatalf("%d series stored, want %d", got, series)
	}
	grew := float64(liveHeap()) - float64(before)
	values := float64(series * 7 * width)
	t.Logf("%d series of 7 × %d-byte labels: the heap grew by %.1f MiB for %.1f MiB of values (%.2f×)", series, width, grew/(1<<20), values/(1<<20), grew/values)
	if grew > 2*values {
		t.Errorf("the heap grew by %.2f× the label values stored, want ≤ 2×", grew/values)
	}
	runtime.KeepAlive(s)
}

// The label bytes of all series are bounded under default flags: 10,000
// series whose seven labels sit at the 1,024-byte limit (70 MiB of
// values). The store takes what fits in the label budget and counts the
// rest once, as overflow; the heap and the text page stay bounded by it.
// Without the budget the store held all 70 MiB four times and the text
// page was 1.31 GB.
func TestLabelBytesBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests 70 MiB of label values")
	}
	cfg := DefaultConfig()
	cfg.DisableExporterMetrics = true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const series, width = 10000, defaultMaxLabelValue
	before := liveHeap()
	for i := range series {
		s.IngestPoint(&k6.Point{Metric: "http_req_duration", Value: float64(1 + i%500), Tags: wideTags(i, width)})
	}
	grew := float64(liveHeap()) - float64(before)
	stored := s.st.nseries.Load()
	accepted := testutil.ToFloat64(s.points.WithLabelValues(SourceAPI))
	refused := testutil.ToFloat64(s.overflow.WithLabelValues("label_bytes"))
	t.Logf("%d series stored, %v points accepted, %v refused for label bytes; the heap grew by %.1f MiB", stored, accepted, refused, grew/(1<<20))
	if accepted+refused != series || int64(accepted) != stored {
		t.Errorf("%v accepted and %v refused of %d points sent, %d series stored: counts not exact", accepted, refused, series, stored)
	}
	budget := float64(defaultLabelBytesLimit)
	if held := float64(s.st.labelBytes.Load()); held > budget || held < budget-7*(width+1) {
		t.Errorf("%.0f label bytes held, want the budget of %.0f filled", held, budget)
	}
	if grew > 2*budget {
		t.Errorf("the heap grew by %.1f MiB, want ≤ twice the %.0f MiB label budget", grew/(1<<20), budget/(1<<20))
	}
	sc := newScrapes(s.Gatherer(), slog.New(slog.DiscardHandler), 0)
	t0 := time.Now()
	gz, err := sc.encode(expfmt.NewFormat(expfmt.TypeTextPlain), nil)
	took := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.Copy(io.Discard, zr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("text page: %.1f MiB (%.1f MiB gzipped), rendered in %v", float64(page)/(1<<20), float64(len(gz))/(1<<20), took)
	// Every line of a histogram series repeats its labels: about 20 lines
	// a series with the default buckets.
	if float64(page) > 24*budget {
		t.Errorf("text page of %.0f MiB, want ≤ 24 × the %.0f MiB label budget", float64(page)/(1<<20), budget/(1<<20))
	}
}
