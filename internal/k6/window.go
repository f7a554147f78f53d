package k6

import (
	"math"
	"time"
)

// runStart is k6's test start as far as a point stream shows it: k6 samples
// vus once a second from the start, so the first vus sample less one second,
// unless a sample is earlier still.
func runStart(minT, vusT int64) int64 {
	if vusT != math.MaxInt64 && vusT-1e9 < minT {
		return vusT - 1e9
	}
	return minT
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
// was asked for, else the run as the stream shows it.
func (l *pointLoad) setBounds(run *Run) {
	sh := l.sh
	start := runStart(sh.minT.Load(), sh.firstVusT.Load())
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
