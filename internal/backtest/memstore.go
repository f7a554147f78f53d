package backtest

import (
	"context"
	"math"
	"slices"
	"sort"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// memStore is the in-memory storage the PromQL engine reads during a
// backtest: float or native histogram samples per series, appended in time order. It keeps a
// TSDB head's append rules (no out-of-order or conflicting duplicate
// samples) without linking the tsdb package, which pulls Prometheus's
// configuration and with it service discovery and cloud SDKs into every
// command of the binary.
type memStore struct {
	byKey  map[string]*memSeries
	byName map[string]*nameIndex
	buf    []byte
}

type memSeries struct {
	lset    labels.Labels
	samples memSamples
}

// nameIndex holds the series of one metric name, sorted by labels on
// demand (Select returns sorted sets, as a TSDB does).
type nameIndex struct {
	series []*memSeries
	sorted bool
}

func newMemStore() *memStore {
	return &memStore{byKey: map[string]*memSeries{}, byName: map[string]*nameIndex{}}
}

// Append adds one float sample. Like a TSDB head without out-of-order
// ingestion, it refuses a sample older than the series' last one, and a
// different value at the same timestamp; the same value again is a no-op.
func (m *memStore) Append(l labels.Labels, t int64, v float64) error {
	return m.add(m.series(l), memSample{t: t, f: v})
}

// series returns l's series, creating it.
func (m *memStore) series(l labels.Labels) *memSeries {
	m.buf = l.Bytes(m.buf[:0])
	s := m.byKey[string(m.buf)]
	if s == nil {
		s = &memSeries{lset: l}
		m.byKey[string(m.buf)] = s
		name := l.Get(model.MetricNameLabel)
		ix := m.byName[name]
		if ix == nil {
			ix = &nameIndex{}
			m.byName[name] = ix
		}
		ix.series = append(ix.series, s)
		ix.sorted = false
	}
	return s
}

// AppendHistogram adds one native histogram sample, by the same rules.
func (m *memStore) AppendHistogram(l labels.Labels, t int64, fh *histogram.FloatHistogram) error {
	return m.add(m.series(l), memSample{t: t, fh: fh})
}

func (m *memStore) add(s *memSeries, x memSample) error {
	if n := len(s.samples); n > 0 {
		switch last := s.samples[n-1]; {
		case x.t < last.t:
			return storage.ErrOutOfOrderSample
		case x.t == last.t:
			if x.fh == nil && last.fh == nil && math.Float64bits(x.f) == math.Float64bits(last.f) ||
				x.fh != nil && last.fh != nil && x.fh.Equals(last.fh) {
				return nil
			}
			return storage.ErrDuplicateSampleForTimestamp
		}
	}
	s.samples = append(s.samples, x)
	return nil
}

// Querier implements storage.Queryable.
func (m *memStore) Querier(mint, maxt int64) (storage.Querier, error) {
	return &memQuerier{m: m, mint: mint, maxt: maxt}, nil
}

type memQuerier struct {
	m          *memStore
	mint, maxt int64
}

func (q *memQuerier) Select(_ context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = hints.Start, hints.End
	}
	var cands []*memSeries
	byName := false
	for _, mt := range ms {
		if mt.Name == model.MetricNameLabel && mt.Type == labels.MatchEqual {
			if ix := q.m.byName[mt.Value]; ix != nil {
				if !ix.sorted {
					sortSeries(ix.series)
					ix.sorted = true
				}
				cands = ix.series
			}
			byName = true
			break
		}
	}
	if !byName {
		for _, ix := range q.m.byName {
			cands = append(cands, ix.series...)
		}
		sortSeries(cands)
	}
	set := &memSeriesSet{i: -1}
next:
	for _, s := range cands {
		for _, mt := range ms {
			if !mt.Matches(s.lset.Get(mt.Name)) {
				continue next
			}
		}
		ss := s.samples
		lo := sort.Search(len(ss), func(i int) bool { return ss[i].t >= mint })
		hi := sort.Search(len(ss), func(i int) bool { return ss[i].t > maxt })
		if lo >= hi {
			continue
		}
		set.series = append(set.series, &memSeriesView{lset: s.lset, samples: ss[lo:hi]})
	}
	return set
}

func sortSeries(s []*memSeries) {
	slices.SortFunc(s, func(a, b *memSeries) int { return labels.Compare(a.lset, b.lset) })
}

func (q *memQuerier) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (q *memQuerier) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (q *memQuerier) Close() error { return nil }

type memSeriesSet struct {
	series []*memSeriesView
	i      int
}

func (s *memSeriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *memSeriesSet) At() storage.Series                { return s.series[s.i] }
func (s *memSeriesSet) Err() error                        { return nil }
func (s *memSeriesSet) Warnings() annotations.Annotations { return nil }

// memSeriesView is one series' samples within a query's time range.
type memSeriesView struct {
	lset    labels.Labels
	samples memSamples
}

func (v *memSeriesView) Labels() labels.Labels { return v.lset }

func (v *memSeriesView) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if mi, ok := it.(*memIterator); ok {
		if r, ok := mi.Iterator.(interface{ Reset(storage.Samples) }); ok {
			r.Reset(v.samples)
			return mi
		}
	}
	return &memIterator{storage.NewListSeriesIterator(v.samples)}
}

// memIterator walks a series' samples. It hands out native histograms
// as a TSDB iterator does: copied into the caller's histogram, or a new
// one, never the stored sample. The PromQL engine owns what it is given:
// it keeps histograms in package-wide pools and reuses them as scratch
// space, in any engine of the process, so a stored sample handed out
// would be overwritten, and two backtests running at once would write
// into each other's series.
type memIterator struct {
	chunkenc.Iterator // a list iterator over memSamples
}

func (it *memIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	t, stored := it.Iterator.AtFloatHistogram(nil)
	switch {
	case stored == nil:
		return t, nil
	case fh == nil:
		return t, stored.Copy()
	}
	stored.CopyTo(fh)
	return t, fh
}

// memSample is one float sample; pointers to it satisfy chunks.Sample
// without an allocation per read.
type memSample struct {
	t  int64
	f  float64
	fh *histogram.FloatHistogram // a native histogram sample when set
}

func (s *memSample) T() int64                      { return s.t }
func (s *memSample) ST() int64                     { return 0 }
func (s *memSample) F() float64                    { return s.f }
func (s *memSample) H() *histogram.Histogram       { return nil }
func (s *memSample) FH() *histogram.FloatHistogram { return s.fh }
func (s *memSample) Type() chunkenc.ValueType {
	if s.fh != nil {
		return chunkenc.ValFloatHistogram
	}
	return chunkenc.ValFloat
}
func (s *memSample) Copy() chunks.Sample { c := *s; return &c }

type memSamples []memSample

func (m memSamples) Get(i int) chunks.Sample { return &m[i] }
func (m memSamples) Len() int                { return len(m) }
