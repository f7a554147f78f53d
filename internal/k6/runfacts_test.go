package k6

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// samplesOf are a view's samples from a run's kept points, sorted: the
// metric's, or those of its tagged sub-metric.
func samplesOf(r *Run, metric string, tags map[string]string) []float64 {
	var xs []float64
	for _, p := range r.Points {
		if p.Metric == metric && matches(p.Tags, tags) {
			xs = append(xs, p.Value)
		}
	}
	slices.Sort(xs)
	return xs
}

// timeBinsOf are a view's samples from a run's kept points in the time
// bins the loader takes its intervals' batches from.
func timeBinsOf(r *Run, metric string, tags map[string]string) []*stats.Sketch {
	var times []int64
	var vals []float64
	for _, p := range r.Points {
		if p.Metric == metric && matches(p.Tags, tags) {
			times, vals = append(times, p.Time.UnixNano()), append(vals, p.Value)
		}
	}
	return IntervalBinsOf(times, vals)
}

// The intervals the loader computes in one pass equal the wider of
// stats.QuantileCI and stats.BatchQuantileCI over the run's kept points
// in time bins, view by view, with one worker or two; in sketch mode
// each bound is within the sketch's accuracy of the exact one. On this
// real run the batches over time widen some of them.
func TestIntervals(t *testing.T) {
	path := fixtures.Path(t, "k6/history-v2.2.0/run-16.ndjson.gz")
	stats95 := []string{"med", "p(95)", "p(99)"}
	points := mustLoad(t, path, LoadOptions{KeepPoints: true})
	for _, mode := range []Mode{ModeExact, ModeSketch} {
		for _, workers := range []int{1, 2} {
			r := mustLoad(t, path, LoadOptions{Stats: append(DefaultStats(), "p(99)"), IntervalConfidence: 0.95, Mode: mode, Workers: workers})
			checked, widened := 0, 0
			for _, name := range []string{"http_req_duration", "http_req_duration{expected_response:true}", "auth_login"} {
				parent, tags := SplitName(name)
				xs := samplesOf(points, parent, tags)
				bins := timeBinsOf(points, parent, tags)
				m := r.Metrics[name]
				for _, st := range stats95 {
					p := map[string]float64{"med": 0.5, "p(95)": 0.95, "p(99)": 0.99}[st]
					olo, ohi, ook := stats.QuantileCI(xs, p, 0.95)
					blo, bhi, bok := stats.BatchQuantileCI(bins, p, stats.Quantile(xs, p), 0.95)
					lo, hi, ok := stats.WiderInterval(olo, ohi, ook, blo, bhi, bok)
					if ok && (lo != olo || hi != ohi) {
						widened++
					}
					got, has := m.Intervals[st]
					if ok != has {
						t.Errorf("%s %s %s: interval %v, exact one exists %v", mode, name, st, has, ok)
						continue
					}
					if !ok {
						continue
					}
					checked++
					tol := 0.0
					if mode == ModeSketch {
						tol = stats.SketchAlpha
					}
					near := func(lo, hi float64) bool {
						return math.Abs(got.Low-lo) <= tol*lo && math.Abs(got.High-hi) <= tol*hi
					}
					// Two intervals of nearly the same width may change
					// places within the sketch's accuracy.
					tie := ook && bok && math.Abs(math.Log(ohi/olo)-math.Log(bhi/blo)) < 4*tol
					if !near(lo, hi) && !(tie && (near(olo, ohi) || near(blo, bhi))) {
						t.Errorf("%s, %d workers, %s %s: [%v, %v], want [%v, %v]", mode, workers, name, st, got.Low, got.High, lo, hi)
					}
				}
			}
			// auth_login's few hundred requests reach no p99 interval.
			if checked < 8 {
				t.Errorf("%s: only %d intervals checked", mode, checked)
			}
			if widened == 0 {
				t.Errorf("%s: no interval widened by the batches over time", mode)
			}
		}
	}
	// Without IntervalConfidence, none.
	if r := mustLoad(t, path, LoadOptions{}); r.Metrics["http_req_duration"].Intervals != nil {
		t.Error("intervals without IntervalConfidence")
	}
}

// A view's fingerprint depends on its samples alone: the same in both
// modes and with any number of workers, the parent's equal to the sum
// over its classes, and different for a view of other samples.
func TestFingerprint(t *testing.T) {
	path := fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")
	points := mustLoad(t, path, LoadOptions{KeepPoints: true})
	want := func(metric string, tags map[string]string) uint64 {
		var fp uint64
		for _, x := range samplesOf(points, metric, tags) {
			fp = fingerprint(fp, x)
		}
		return fp
	}
	for _, mode := range []Mode{ModeExact, ModeSketch} {
		for _, workers := range []int{1, 2} {
			r := mustLoad(t, path, LoadOptions{Mode: mode, Workers: workers, GroupBy: "scenario"})
			for _, name := range []string{"http_req_duration", "http_req_duration{expected_response:true}", "iteration_duration"} {
				parent, tags := SplitName(name)
				if got, w := r.Metrics[name].Fingerprint, want(parent, tags); got != w || got == 0 {
					t.Errorf("%s, %d workers: %s fingerprint %x, want %x", mode, workers, name, got, w)
				}
			}
			for g, ms := range r.Groups {
				if got, w := ms["http_req_duration"].Fingerprint, want("http_req_duration", map[string]string{"scenario": g}); got != w {
					t.Errorf("%s: group %s fingerprint %x, want %x", mode, g, got, w)
				}
			}
			if r.Metrics["http_req_duration"].Fingerprint == r.Metrics["iteration_duration"].Fingerprint {
				t.Error("two views of different samples share a fingerprint")
			}
		}
	}
}

// The timeline holds every http_req_duration sample in the window once,
// in at most TimelineBins bins of one width aligned to it, from the first
// sample's time to the last's, in both modes.
func TestTimeline(t *testing.T) {
	path := fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-a.ndjson.gz")
	for _, mode := range []Mode{ModeExact, ModeSketch} {
		r := mustLoad(t, path, LoadOptions{Timeline: true, Mode: mode, Stats: []string{"count"}})
		tl := r.Timeline
		if tl == nil {
			t.Fatalf("%s: no timeline", mode)
		}
		var n uint64
		for i, b := range tl.Bins {
			n += b.Samples.Count()
			if b.Start.UnixNano()%int64(tl.Width) != 0 || i > 0 && !b.Start.After(tl.Bins[i-1].Start) {
				t.Errorf("%s: bin %d at %v, width %v", mode, i, b.Start, tl.Width)
			}
		}
		if want := r.Metrics["http_req_duration"].Values["count"]; float64(n) != want {
			t.Errorf("%s: %d samples in the timeline, http_req_duration has %v", mode, n, want)
		}
		span := tl.Last.Sub(tl.First)
		if bins := tl.Bins[len(tl.Bins)-1].Start.Sub(tl.Bins[0].Start) / tl.Width; bins >= TimelineBins || tl.Width > 2*span/TimelineBins+timelineWidthD {
			t.Errorf("%s: %d bins of %v over %v", mode, bins+1, tl.Width, span)
		}
		if tl.First.Before(tl.Bins[0].Start) || !tl.Last.Before(tl.Bins[len(tl.Bins)-1].Start.Add(tl.Width)) {
			t.Errorf("%s: samples %v–%v outside the bins", mode, tl.First, tl.Last)
		}
	}
	if r := mustLoad(t, path, LoadOptions{Stats: []string{"count"}}); r.Timeline != nil {
		t.Error("a timeline without LoadOptions.Timeline")
	}
}

// The timeline's failure bins hold every http_req_failed sample once, at
// the duration bins' width and alignment, their sums the failed
// requests: on a run whose uploads were answered 503 now and then.
func TestTimelineFailed(t *testing.T) {
	path := fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz")
	r := mustLoad(t, path, LoadOptions{Timeline: true, Stats: []string{"count"}})
	tl := r.Timeline
	if tl == nil || len(tl.Failed) == 0 {
		t.Fatal("no failure bins")
	}
	var n uint64
	var failed float64
	starts := map[time.Time]bool{}
	for _, b := range tl.Bins {
		starts[b.Start] = true
	}
	for i, b := range tl.Failed {
		n += b.Samples.Count()
		failed += b.Samples.Sum()
		if b.Start.UnixNano()%int64(tl.Width) != 0 || i > 0 && !b.Start.After(tl.Failed[i-1].Start) || !starts[b.Start] {
			t.Errorf("failure bin %d at %v, width %v, not a duration bin's start", i, b.Start, tl.Width)
		}
	}
	m := r.Metrics["http_req_failed"]
	if want := m.Values["passes"] + m.Values["fails"]; float64(n) != want {
		t.Errorf("%d samples in the failure bins, http_req_failed has %v", n, want)
	}
	if want := m.Values["passes"]; failed != want || failed == 0 {
		t.Errorf("%v failed requests in the failure bins, http_req_failed has %v", failed, want)
	}
}

// timelineWidthD is the narrowest bin as a duration.
const timelineWidthD = 250_000_000

// The values of the run's tags: one each for the test-wide ones.
func TestTagValues(t *testing.T) {
	r := mustLoad(t, fixtures.Path(t, "k6/history-v2.2.0/run-16.ndjson.gz"), LoadOptions{Stats: []string{"count"}})
	for k, want := range map[string]string{"testid": "run-16", "commit": "c16", "envelope": "history-shared", "scenario": "baseline"} {
		if got := r.TagValues[k]; !slices.Equal(got, []string{want}) {
			t.Errorf("tag %s: %q, want [%s]", k, got, want)
		}
	}
	if got := r.TagValues["name"]; len(got) != 4 {
		t.Errorf("name: %q, want the 4 endpoints", got)
	}
	for k, vs := range r.TagValues {
		if len(vs) > MaxTagValues || !slices.IsSorted(vs) {
			t.Errorf("tag %s: %d values %q", k, len(vs), vs)
		}
	}
}

// A point stream's http_reqs rate is k6's own, as the run's summary
// states it, on every real run of the baseline-mix workload with both
// files: within 0.06% (the documented accuracy, docs/formats.md).
func TestRateMatchesSummary(t *testing.T) {
	streams := fixtures.Glob(t, "k6/*/*.ndjson.gz")
	checked := 0
	worst := 0.0
	for _, s := range streams {
		sum := strings.TrimSuffix(s, ".ndjson.gz") + ".summary.json"
		want, err := Load(sum, LoadOptions{})
		if err != nil {
			continue // no summary of this run
		}
		got := mustLoad(t, s, LoadOptions{Stats: []string{"count"}})
		w, g := want.Metrics["http_reqs"].Values["rate"], got.Metrics["http_reqs"].Values["rate"]
		d := math.Abs(g/w - 1)
		worst = max(worst, d)
		if d > 0.0006 {
			t.Errorf("%s: http_reqs rate %.4f, k6's %.4f (%+.3f%%)", filepath.Base(s), g, w, 100*(g/w-1))
		}
		checked++
	}
	t.Logf("%d runs, worst %.4f%%", checked, 100*worst)
	if checked < 34 {
		t.Errorf("only %d runs with a summary checked", checked)
	}
}
