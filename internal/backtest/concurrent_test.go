package backtest

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/rules"
)

// realEnvelope is the envelope of baseline-a and baseline-b, computed
// afresh on each call so callers hold separate copies.
func realEnvelope(t *testing.T) *envelope.Envelope {
	t.Helper()
	in, err := figures.ReadFiles([]string{fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-a.summary.json"), fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-b.summary.json")}, figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	wl, err := envelope.ReadK6Options(fixtures.Path(t, "k6/baseline-mix-v2.2.0/script.k6-inspect.json"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compute(in, envelope.Options{Name: "baseline-mix-ab", Workload: wl})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// Backtests running at the same time in one process are independent: two
// of baseline-c and two of the regressed run, all at once, give the same
// alerts pairwise and those of TestRealRuns. Each pair of runs shares an
// envelope and its rule files; the pairs have their own copies.
func TestConcurrentFiles(t *testing.T) {
	runs := []string{
		fixtures.Baselines(t)[2],
		fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz"),
	}
	type job struct {
		path  string
		env   *envelope.Envelope
		files []string
		run   *Run
		err   error
	}
	var jobs []*job
	for range 2 {
		env := realEnvelope(t)
		files := rulesFor(t, env)
		for _, p := range runs {
			jobs = append(jobs, &job{path: p, env: env, files: files})
		}
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() { j.run, j.err = File(context.Background(), j.env, j.files, j.path, Options{}) })
	}
	wg.Wait()
	for _, j := range jobs {
		if j.err != nil {
			t.Fatalf("%s: %v", j.path, j.err)
		}
	}
	for i := range runs {
		a, b := jobs[i].run, jobs[i+len(runs)].run
		a.Source, b.Source = "", ""
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: concurrent backtests differ:\n%v\n%v", runs[i], names(a), names(b))
		}
	}
	if got := names(jobs[0].run); len(got) != 0 {
		t.Errorf("baseline-c: false alarms %v", got)
	}
	if got := strings.Join(names(jobs[1].run), " "); !strings.Contains(got, rules.AlertRequestsFailing) {
		t.Errorf("regressed run: %s did not fire; fired: %s", rules.AlertRequestsFailing, got)
	}
}

// The store's iterator never hands out a stored native histogram: the
// PromQL engine reuses what it is given as scratch space. Whatever the
// caller does with the histogram it gets, the stored sample stays.
func TestIteratorCopiesHistograms(t *testing.T) {
	stored := &histogram.FloatHistogram{Count: 3, Sum: 1.5, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []float64{1, 2}}
	want := stored.Copy()
	m := newMemStore()
	l := labels.FromStrings("__name__", "h")
	if err := m.AppendHistogram(l, 1000, stored); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		into *histogram.FloatHistogram
	}{
		{"no histogram given", nil},
		{"histogram given", &histogram.FloatHistogram{PositiveBuckets: make([]float64, 8)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := m.Querier(0, 2000)
			ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "h"))
			if !ss.Next() {
				t.Fatal("series not found")
			}
			it := ss.At().Iterator(nil)
			if it.Next() != chunkenc.ValFloatHistogram {
				t.Fatal("no histogram sample")
			}
			ts, got := it.AtFloatHistogram(tc.into)
			if ts != 1000 || !got.Equals(want) {
				t.Fatalf("got %d %v, want 1000 %v", ts, got, want)
			}
			if got == stored || tc.into != nil && got != tc.into {
				t.Fatalf("returned %p: stored %p, given %p", got, stored, tc.into)
			}
			got.Sum, got.PositiveBuckets[0] = 99, 99
			if !stored.Equals(want) {
				t.Fatalf("stored sample changed to %v", stored)
			}
		})
	}
}
