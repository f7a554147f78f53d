package k6

import (
	"math"
	"slices"
	"time"

	"github.com/envelope-dev/envelope/internal/stats"
)

// TimelineBins bounds a Timeline: once more bins would be needed, the
// bins double in width instead.
const TimelineBins = 64

// IntervalBins bounds the time bins of a trend view whose percentiles'
// intervals take batches over time (stats.BatchQuantileCI groups them
// into at most stats.BatchMax batches), and of every class of a trend
// the Timeline does not show.
const IntervalBins = 24

// timelineWidth is a timeline's narrowest bin, in nanoseconds.
const timelineWidth = int64(250 * time.Millisecond)

// Timeline is a point stream's http_req_duration samples in equal time
// bins, each bin a sketch of the samples that fell in it. Bins are Width
// long and aligned to the Unix epoch; their width doubles (neighbours
// merge) whenever the samples would span more than TimelineBins, so the
// memory is bounded whatever the run's length.
type Timeline struct {
	Width time.Duration
	// First and Last are the earliest and latest sample's times.
	First, Last time.Time
	// Bins in time order; a bin without samples is left out.
	Bins []TimeBin
	// Failed are the stream's http_req_failed samples in bins of the
	// same Width and alignment, in time order: a bin's count is the
	// requests it judged, its sum the failed ones (k6 records 1 for a
	// failed request, 0 for another). Nil when the stream has none.
	Failed []TimeBin
}

// TimeBin is one bin of a Timeline.
type TimeBin struct {
	Start   time.Time
	Samples *stats.Sketch
}

// binner holds one worker's samples of one trend class in time bins:
// the Timeline's, and the batches over time of the intervals (see
// stats.BatchQuantileCI). Samples wait in a buffer until it fills or
// the bins are read, and then go to bins of the width their span needs,
// so a run's bins are made about once rather than made narrow and
// merged again and again as the run goes on.
type binner struct {
	limit      int64 // the most bins the samples span; 0 is TimelineBins
	width      int64
	bins       map[int64]*stats.Sketch // by bin index, time / width
	lo, hi     int64                   // the smallest and largest index
	minT, maxT int64
	buf        []timedSample
}

type timedSample struct {
	t int64
	v float64
}

// binnerBuffer is how many samples a binner holds before binning them:
// a worker has a binner for every class of every trend, so the buffers
// stay small (8 KiB each).
const binnerBuffer = 1 << 9

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func (b *binner) add(t int64, v float64) {
	if b.buf == nil && b.bins == nil {
		b.minT, b.maxT = t, t
		b.lo, b.hi = math.MaxInt64, math.MinInt64
	}
	b.minT, b.maxT = min(b.minT, t), max(b.maxT, t)
	b.buf = append(b.buf, timedSample{t, v})
	if len(b.buf) == binnerBuffer {
		b.flush()
	}
}

// maxBins is the most bins the binner's samples span.
func (b *binner) maxBins() int64 {
	if b.limit > 0 {
		return b.limit
	}
	return TimelineBins
}

// flush bins the buffered samples, at the narrowest width (a power of
// two times timelineWidth) that keeps every sample seen within maxBins
// bins.
func (b *binner) flush() {
	if len(b.buf) == 0 {
		return
	}
	if b.bins == nil {
		b.width, b.bins = timelineWidth, map[int64]*stats.Sketch{}
	}
	for floorDiv(b.maxT, b.width)-floorDiv(b.minT, b.width) >= b.maxBins() {
		b.coarsen()
	}
	for _, s := range b.buf {
		i := floorDiv(s.t, b.width)
		sk := b.bins[i]
		if sk == nil {
			sk = &stats.Sketch{}
			b.bins[i] = sk
			b.lo, b.hi = min(b.lo, i), max(b.hi, i)
		}
		sk.Add(s.v)
	}
	b.buf = b.buf[:0]
}

// coarsen doubles the bins' width, merging each pair of neighbours.
func (b *binner) coarsen() {
	b.width *= 2
	nb := make(map[int64]*stats.Sketch, len(b.bins)/2+1)
	for i, sk := range b.bins {
		j := floorDiv(i, 2)
		if d := nb[j]; d != nil {
			d.Merge(sk)
		} else {
			nb[j] = sk
		}
	}
	b.bins = nb
	if len(nb) > 0 {
		b.lo, b.hi = floorDiv(b.lo, 2), floorDiv(b.hi, 2)
	}
}

// merge adds o's bins, both taken to the wider of the two widths.
func (b *binner) merge(o *binner) {
	o.flush()
	if o.bins == nil {
		return
	}
	if b.bins == nil {
		limit := b.limit
		*b = *o
		if limit > 0 {
			b.limit = limit
			for b.hi-b.lo >= b.maxBins() {
				b.coarsen()
			}
		}
		return
	}
	b.flush()
	b.minT, b.maxT = min(b.minT, o.minT), max(b.maxT, o.maxT)
	for b.width < o.width {
		b.coarsen()
	}
	for o.width < b.width {
		o.coarsen()
	}
	for i, sk := range o.bins {
		if d := b.bins[i]; d != nil {
			d.Merge(sk)
		} else {
			b.bins[i] = sk
		}
	}
	b.lo, b.hi = min(b.lo, o.lo), max(b.hi, o.hi)
	for b.hi-b.lo >= b.maxBins() {
		b.coarsen()
	}
}

// binnerOf is the worker's binner of a trend metric's class: the
// Timeline's many bins for the metric it shows, IntervalBins for any
// other.
func (w *worker) binnerOf(m *metricInfo, class uint16) *binner {
	mi := m.idx
	for len(w.bins) <= mi {
		w.bins = append(w.bins, nil)
	}
	row := w.bins[mi]
	for len(row) <= int(class) {
		row = append(row, nil)
	}
	w.bins[mi] = row
	if row[class] == nil {
		row[class] = &binner{}
		if !m.timeline {
			row[class].limit = IntervalBins
		}
	}
	return row[class]
}

// foldBinners merges the workers' binners, by metric idx and class.
func foldBinners(workers []*worker) [][]*binner {
	var out [][]*binner
	for _, w := range workers {
		for mi, row := range w.bins {
			for len(out) <= mi {
				out = append(out, nil)
			}
			for ci, b := range row {
				if b == nil {
					continue
				}
				for len(out[mi]) <= ci {
					out[mi] = append(out[mi], nil)
				}
				if out[mi][ci] == nil {
					out[mi][ci] = &binner{}
				}
				out[mi][ci].merge(b)
			}
		}
	}
	return out
}

// binsOf are the time bins of a trend view, the classes want selects,
// in time order, at most IntervalBins of them: the narrowest width (a
// power of two times timelineWidth, no narrower than any class's) that
// keeps the view's samples within IntervalBins bins, as one binner of
// the view's samples with that limit would make them. The classes'
// binners are only read; a bin of one class at its own width is shared,
// not copied.
func binsOf(row []*binner, want func(ci int) bool) []*stats.Sketch {
	var picked []*binner
	var width int64
	for ci, b := range row {
		if b == nil || !want(ci) {
			continue
		}
		b.flush()
		if len(b.bins) == 0 {
			continue
		}
		picked = append(picked, b)
		width = max(width, b.width)
	}
	if len(picked) == 0 {
		return nil
	}
	for {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, b := range picked {
			lo, hi = min(lo, floorDiv(b.minT, width)), max(hi, floorDiv(b.maxT, width))
		}
		if hi-lo < IntervalBins {
			break
		}
		width *= 2
	}
	byIdx := map[int64][]*stats.Sketch{}
	for _, b := range picked {
		f := width / b.width
		for i, sk := range b.bins {
			j := floorDiv(i, f)
			byIdx[j] = append(byIdx[j], sk)
		}
	}
	idx := make([]int64, 0, len(byIdx))
	for i := range byIdx {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	out := make([]*stats.Sketch, len(idx))
	for j, i := range idx {
		sks := byIdx[i]
		if len(sks) == 1 {
			out[j] = sks[0]
			continue
		}
		m := &stats.Sketch{}
		for _, sk := range sks {
			m.Merge(sk)
		}
		out[j] = m
	}
	return out
}

// IntervalBinsOf are the time bins the loader takes the batches of a
// trend view's intervals from, for samples with their times (Unix
// nanoseconds) in any order; nil without samples or when the lengths
// differ.
func IntervalBinsOf(times []int64, vals []float64) []*stats.Sketch {
	if len(times) != len(vals) || len(vals) == 0 {
		return nil
	}
	b := &binner{limit: IntervalBins}
	for i, t := range times {
		b.add(t, vals[i])
	}
	return binsOf([]*binner{b}, func(int) bool { return true })
}

// TimelineOf is the Timeline the loader makes of samples with their
// times (Unix nanoseconds), in any order: for a reader that draws or
// holds samples itself and takes the loader's figures of them. nil
// without samples or when the lengths differ.
func TimelineOf(times []int64, vals []float64) *Timeline {
	if len(times) != len(vals) {
		return nil
	}
	var b binner
	for i, t := range times {
		b.add(t, vals[i])
	}
	return b.timeline()
}

// bytes is the memory the binner's bins and buffer hold.
func (b *binner) bytes() int64 {
	n := int64(16 * cap(b.buf))
	for _, sk := range b.bins {
		n += int64(sk.Bytes())
	}
	return n
}

// timelineOf is the Timeline of the duration metric's binners (by
// class), with the failed metric's bins at the same width; nil without
// duration samples. Either metric may be nil.
func timelineOf(duration, failed *metricInfo, bins [][]*binner) *Timeline {
	fold := func(m *metricInfo) *binner {
		var b binner
		if m != nil && m.idx < len(bins) {
			for _, c := range bins[m.idx] {
				if c != nil {
					b.merge(c)
				}
			}
		}
		return &b
	}
	d, f := fold(duration), fold(failed)
	d.flush()
	f.flush()
	if len(d.bins) > 0 && len(f.bins) > 0 {
		for d.width < f.width {
			d.coarsen()
		}
		for f.width < d.width {
			f.coarsen()
		}
	}
	t := d.timeline()
	if t != nil {
		if ft := f.timeline(); ft != nil {
			t.Failed = ft.Bins
		}
	}
	return t
}

// timeline is the bins in time order; nil without samples.
func (b *binner) timeline() *Timeline {
	b.flush()
	if len(b.bins) == 0 {
		return nil
	}
	idx := make([]int64, 0, len(b.bins))
	for i := range b.bins {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	t := &Timeline{Width: time.Duration(b.width), First: time.Unix(0, b.minT).UTC(), Last: time.Unix(0, b.maxT).UTC()}
	for _, i := range idx {
		t.Bins = append(t.Bins, TimeBin{Start: time.Unix(0, i*b.width).UTC(), Samples: b.bins[i]})
	}
	return t
}

// fingerprint adds one sample to a multiset fingerprint: the sum of a
// mix of each sample's bits, so order does not matter and views over
// different classes add up.
func fingerprint(fp uint64, v float64) uint64 {
	x := math.Float64bits(v)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return fp + x
}
