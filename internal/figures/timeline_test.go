package figures

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

func readOne(t *testing.T, rel string) Run {
	t.Helper()
	rs, err := ReadFiles([]string{fixtures.Path(t, rel)}, LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	return rs[0]
}

// A point stream's timeline holds each of its requests and each failure
// once, in bins laid end to end from its first sample, each a whole bin
// wide but the two ends (at least half a bin, at most one and a half);
// a bin's rate is its requests over its width, and the steady bins'
// rates lie near the run's; its percentiles are ordered and its p95s
// centre on the run's.
func TestRunTimeline(t *testing.T) {
	for _, rel := range []string{
		"k6/baseline-mix-v2.2.0/baseline-a.ndjson.gz",
		"k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz",
	} {
		r := readOne(t, rel)
		tl := r.Timeline
		if tl == nil || len(tl.Bins) < 10 {
			t.Fatalf("%s: timeline %+v", rel, tl)
		}
		if !tl.Failures {
			t.Errorf("%s: failures per bin unknown", rel)
		}
		var reqs, failed, judged int64
		var p95s []float64
		for i, b := range tl.Bins {
			reqs += b.Requests
			failed += b.Failed
			judged += b.Judged
			if i == 0 && b.Offset != 0 {
				t.Errorf("%s: first bin at %v, not at the first sample", rel, b.Offset)
			}
			if i > 0 && b.Offset != tl.Bins[i-1].Offset+tl.Bins[i-1].Width {
				t.Errorf("%s: bin %d at %v, the previous ends at %v", rel, i, b.Offset, tl.Bins[i-1].Offset+tl.Bins[i-1].Width)
			}
			end := i == 0 || i == len(tl.Bins)-1
			if !end && b.Width != tl.Width || end && (b.Width < tl.Width/2 || b.Width > 3*tl.Width/2) {
				t.Errorf("%s: bin %d is %v wide, bins are %v", rel, i, b.Width, tl.Width)
			}
			if want := float64(b.Requests) / b.Width.Seconds(); math.Abs(b.Rate()-want) > 1e-9*want {
				t.Errorf("%s: bin %d: rate %v, %d requests over %v is %v", rel, i, b.Rate(), b.Requests, b.Width, want)
			}
			if !end && math.Abs(b.Rate()/r.RPS-1) > 0.1 {
				t.Errorf("%s: bin %d: %.2f req/s, the run %.2f", rel, i, b.Rate(), r.RPS)
			}
			if !(0 < b.P50 && b.P50 <= b.P95 && b.P95 <= b.P99 && b.P99 <= r.Max) {
				t.Errorf("%s: bin %d: p50 %v, p95 %v, p99 %v, run max %v", rel, i, b.P50, b.P95, b.P99, r.Max)
			}
			p95s = append(p95s, b.P95)
		}
		if reqs != r.Requests {
			t.Errorf("%s: %d requests in the bins, the run has %d", rel, reqs, r.Requests)
		}
		if failed != r.Failed || judged != r.Checked {
			t.Errorf("%s: %d of %d failed in the bins, the run %d of %d", rel, failed, judged, r.Failed, r.Checked)
		}
		slices.Sort(p95s)
		if m := p95s[len(p95s)/2]; math.Abs(m/r.P95-1) > 0.2 {
			t.Errorf("%s: the bins' median p95 %v, the run's %v", rel, m, r.P95)
		}
	}
}

// A run's checks are read from either format alike: the point stream's
// check samples give the counts its own summary export gives.
func TestRunChecks(t *testing.T) {
	stream := readOne(t, "k6/baseline-mix-v2.2.0/baseline-a.ndjson.gz")
	summary := readOne(t, "k6/baseline-mix-v2.2.0/baseline-a.summary.json")
	if len(stream.Checks) == 0 || !slices.Equal(stream.Checks, summary.Checks) {
		t.Errorf("checks: stream %+v, summary %+v", stream.Checks, summary.Checks)
	}
	if !slices.IsSortedFunc(stream.Checks, func(a, b Check) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("checks not by name: %+v", stream.Checks)
	}
	if summary.Timeline != nil {
		t.Errorf("a summary with a timeline: %+v", summary.Timeline)
	}
	reg := readOne(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz")
	var fails int64
	for _, c := range reg.Checks {
		fails += c.Fails
		if want := float64(c.Passes) / float64(c.Passes+c.Fails); c.Rate() != want {
			t.Errorf("check %s: rate %v, want %v", c.Name, c.Rate(), want)
		}
	}
	if fails == 0 {
		t.Errorf("the run with 503s has no failed check: %+v", reg.Checks)
	}
}
