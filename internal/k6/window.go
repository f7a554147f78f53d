package k6

import (
	"math"
	"time"
)

// runStart is k6's test start as far as a point stream shows it: k6 samples
// vus once a second from the start, so the first vus sample less one second,
// unless a sample is earlier still. A window's offsets (--skip-warmup,
// --from, --to) count from it.
func runStart(minT, vusT int64) int64 {
	if vusT != math.MaxInt64 && vusT-1e9 < minT {
		return vusT - 1e9
	}
	return minT
}

// TestStart is runStart on times, for a reader of a point stream that
// places a window itself: the stream's first sample, and its first vus
// sample (zero when none).
func TestStart(first, firstVUs time.Time) time.Time {
	vusT := int64(math.MaxInt64)
	if !firstVUs.IsZero() {
		vusT = firstVUs.UnixNano()
	}
	return time.Unix(0, runStart(first.UnixNano(), vusT)).UTC()
}

// setWindow places the window once the run's start is known.
func (l *pointLoad) setWindow(start int64) {
	l.winStart = start
	l.sh.lower = start + int64(l.lowerD)
	if l.opts.To > 0 {
		l.sh.upper = start + int64(l.opts.To)
	}
}

// setBounds sets the run's start, end and duration: the window when one
// was asked for, else from the earliest iteration's start (a sample's
// time less its iteration_duration), or the first sample when earlier or
// there is none, to the last sample. k6 stamps a sample when its request
// or iteration ends and stops its clock once the last iteration ends, so
// that span is k6's own test duration (http_reqs rate is the count over
// it) within 0.06% on the real baseline-mix runs, one-minute runs
// included (docs/formats.md). What no sample shows is not counted: an
// arrival-rate scenario's wait for its first arrival.
func (l *pointLoad) setBounds(run *Run) {
	sh := l.sh
	start := min(sh.minT.Load(), sh.iterT.Load())
	end := sh.maxT.Load()
	if l.windowed {
		lo := l.winStart + int64(l.lowerD)
		hi := end
		if l.opts.To > 0 && l.winStart+int64(l.opts.To) < hi {
			hi = l.winStart + int64(l.opts.To)
		}
		if hi < lo {
			hi = lo
		}
		run.Start, run.End = time.Unix(0, lo).UTC(), time.Unix(0, hi).UTC()
	} else {
		run.Start, run.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
	}
	run.Duration = run.End.Sub(run.Start)
}
