package figures

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Timeline is a run over time: its requests, their latency percentiles
// and failures in consecutive time bins from its first sample to its
// last, read from a point stream's samples (a summary has none).
type Timeline struct {
	// Width is the bins' width; the first and the last bin may differ
	// (TimeBin.Width).
	Width time.Duration
	Bins  []TimeBin
	// Failures tells whether the bins' Failed and Judged are known: the
	// stream had http_req_failed samples.
	Failures bool
}

// TimeBin is one bin of a Timeline.
type TimeBin struct {
	// Offset is the bin's start after the run's first sample; Width is
	// how much of the run it covers.
	Offset, Width time.Duration
	// Requests are the http_req_duration samples in the bin; P50, P95
	// and P99 their percentiles (ms), 0 in a bin without requests.
	Requests      int64
	P50, P95, P99 float64
	// Failed are the requests http_req_failed marked failed in the bin,
	// of Judged it recorded.
	Failed, Judged int64
}

// Rate is the bin's requests a second.
func (b TimeBin) Rate() float64 {
	if b.Width <= 0 {
		return 0
	}
	return float64(b.Requests) / b.Width.Seconds()
}

// FailureRate is the bin's share of failed requests, 0 when none were
// judged.
func (b TimeBin) FailureRate() float64 {
	if b.Judged <= 0 {
		return 0
	}
	return float64(b.Failed) / float64(b.Judged)
}

// Check is one k6 check's outcome over the run.
type Check struct {
	Name   string
	Passes int64
	Fails  int64
}

// Rate is the check's share of passes, 0 when it never ran.
func (c Check) Rate() float64 {
	if n := c.Passes + c.Fails; n > 0 {
		return float64(c.Passes) / float64(n)
	}
	return 0
}

// checksOf are a run's checks, by name.
func checksOf(cs map[string]k6.Check) []Check {
	out := make([]Check, 0, len(cs))
	for name, c := range cs {
		out = append(out, Check{Name: name, Passes: c.Passes, Fails: c.Fails})
	}
	slices.SortFunc(out, func(a, b Check) int { return cmp.Compare(a.Name, b.Name) })
	if len(out) == 0 {
		return nil
	}
	return out
}

// timelineOf reads the loader's time bins as the run's Timeline. The
// loader's bins are aligned to the clock, so the first and the last lie
// partly outside the run: each is cut to the part the run covers, and
// one that covers less than half a bin joins its neighbour, whose rate
// would otherwise be read from a sliver of time. Bins without requests
// between two with requests are kept (a gap in the load is a fact to
// see). Nil without samples.
func timelineOf(t *k6.Timeline) *Timeline {
	if t == nil || len(t.Bins) == 0 || t.Width <= 0 {
		return nil
	}
	w := t.Width
	first := t.Bins[0].Start
	last := t.Bins[len(t.Bins)-1].Start
	for _, b := range t.Failed {
		first, last = minTime(first, b.Start), maxTime(last, b.Start)
	}
	n := int(last.Sub(first)/w) + 1
	type slot struct {
		start, end  time.Time
		dur, failed stats.Sketch
	}
	slots := make([]slot, n)
	for j := range slots {
		slots[j].start = first.Add(time.Duration(j) * w)
		slots[j].end = slots[j].start.Add(w)
	}
	for _, b := range t.Bins {
		slots[int(b.Start.Sub(first)/w)].dur.Merge(b.Samples)
	}
	for _, b := range t.Failed {
		slots[int(b.Start.Sub(first)/w)].failed.Merge(b.Samples)
	}
	// Cut the ends to the run's span: from its first sample to its last.
	slots[0].start = maxTime(slots[0].start, t.First)
	slots[n-1].end = minTime(slots[n-1].end, t.Last)
	if len(slots) > 1 && slots[0].end.Sub(slots[0].start) < w/2 {
		slots[1].start = slots[0].start
		slots[1].dur.Merge(&slots[0].dur)
		slots[1].failed.Merge(&slots[0].failed)
		slots = slots[1:]
	}
	if k := len(slots); k > 1 && slots[k-1].end.Sub(slots[k-1].start) < w/2 {
		slots[k-2].end = slots[k-1].end
		slots[k-2].dur.Merge(&slots[k-1].dur)
		slots[k-2].failed.Merge(&slots[k-1].failed)
		slots = slots[:k-1]
	}
	out := &Timeline{Width: w, Failures: len(t.Failed) > 0}
	for _, s := range slots {
		b := TimeBin{Offset: s.start.Sub(t.First), Width: s.end.Sub(s.start), Requests: int64(s.dur.Count())}
		if b.Width <= 0 {
			// A run whose samples share one instant: its one bin is a whole bin wide.
			b.Width = w
		}
		if b.Requests > 0 {
			b.P50, b.P95, b.P99 = Round(s.dur.Quantile(0.5)), Round(s.dur.Quantile(0.95)), Round(s.dur.Quantile(0.99))
		}
		b.Judged = int64(s.failed.Count())
		b.Failed = int64(math.Round(s.failed.Sum()))
		out.Bins = append(out.Bins, b)
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
