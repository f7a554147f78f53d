package exporter

import (
	"bytes"
	"io"
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// totals sums a gatherer's families over all label sets: counter values,
// histogram counts, sums, classic buckets and native buckets.
type totals struct {
	counters map[string]float64
	count    map[string]uint64
	sum      map[string]float64
	classic  map[string]map[float64]uint64
	native   map[string]map[int32]int64
}

func sumAll(t *testing.T, s *Server) totals {
	t.Helper()
	mfs, err := s.K6Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	tt := totals{map[string]float64{}, map[string]uint64{}, map[string]float64{}, map[string]map[float64]uint64{}, map[string]map[int32]int64{}}
	for _, mf := range mfs {
		n := mf.GetName()
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				tt.counters[n] += m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				tt.count[n] += h.GetSampleCount()
				tt.sum[n] += h.GetSampleSum()
				if tt.classic[n] == nil {
					tt.classic[n], tt.native[n] = map[float64]uint64{}, map[int32]int64{}
				}
				for _, b := range h.GetBucket() {
					tt.classic[n][b.GetUpperBound()] += b.GetCumulativeCount()
				}
				idx, cur, d := int32(0), int64(0), 0
				for _, sp := range h.GetPositiveSpan() {
					idx += sp.GetOffset()
					for range sp.GetLength() {
						cur += h.GetPositiveDelta()[d]
						d++
						tt.native[n][idx] += cur
						idx++
					}
				}
			}
		}
	}
	return tt
}

// Two exporters each fed half of a run's samples (alternate lines, as two
// k6 instances would produce) sum to exactly what one exporter fed the
// whole run exposes: counters, histogram counts, classic and native
// buckets. This is what makes `sum` across instances and exporters right.
func TestShardedSumsMatch(t *testing.T) {
	all, err := io.ReadAll(fixtures.Open(t, fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-a.ndjson.gz")))
	if err != nil {
		t.Fatal(err)
	}
	var halves [2]bytes.Buffer
	for i, line := range bytes.SplitAfter(all, []byte("\n")) {
		if bytes.Contains(line, []byte(`"type":"Metric"`)) {
			halves[0].Write(line) // both shards know every metric's type
			halves[1].Write(line)
			continue
		}
		halves[i%2].Write(line)
	}
	env := testEnvelope()
	newSrv := func() *Server {
		s, err := New(Config{Envelope: env, DisableExporterMetrics: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	whole, a, b := newSrv(), newSrv(), newSrv()
	if _, err := whole.replayReader("whole", bytes.NewReader(all)); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*Server{a, b} {
		if _, err := s.replayReader("half", &halves[i]); err != nil {
			t.Fatal(err)
		}
	}
	w, ta, tb := sumAll(t, whole), sumAll(t, a), sumAll(t, b)
	if len(w.counters) == 0 || len(w.count) == 0 {
		t.Fatal("nothing exposed")
	}
	for n, v := range w.counters {
		// Float sums in another order may differ in the last bits only.
		if got := ta.counters[n] + tb.counters[n]; math.Abs(got-v) > 1e-12*math.Max(math.Abs(v), 1) {
			t.Errorf("%s: shards sum to %v, whole %v", n, got, v)
		}
	}
	for n, c := range w.count {
		if got := ta.count[n] + tb.count[n]; got != c {
			t.Errorf("%s count: shards %d, whole %d", n, got, c)
		}
		for ub, v := range w.classic[n] {
			if got := ta.classic[n][ub] + tb.classic[n][ub]; got != v {
				t.Errorf("%s le=%g: shards %d, whole %d", n, ub, got, v)
			}
		}
		for idx, v := range w.native[n] {
			if got := ta.native[n][idx] + tb.native[n][idx]; got != v {
				t.Errorf("%s native bucket %d: shards %d, whole %d", n, idx, got, v)
			}
		}
	}
}
