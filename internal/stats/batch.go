package stats

import "math"

// A run's percentile estimated from its own samples has an error that
// QuantileCI gives only for independent samples. Slow requests of a real
// service come in bursts (a pause, a cold cache, a busy neighbour), and
// then the percentile of one stretch of the run differs from the next
// more than independent samples would. Batch means over time
// (sectioning) estimate the error without that assumption: the run's
// samples are cut into consecutive batches, each batch's percentile
// estimated on its own, and their spread around the run's percentile,
// scaled by the batches' sizes, gives the variance of the run's.
const (
	// BatchMinBeyond is the fewest samples beyond a percentile (above
	// it, or below it for a percentile under the median) a batch needs
	// to estimate it at all.
	BatchMinBeyond = 5
	// BatchMin is the fewest batches an error is estimated from (three
	// degrees of freedom); BatchMax the most: more batches are each
	// shorter, so a burst longer than one spans several and they are no
	// longer nearly independent, and each estimates its percentile with
	// more bias. On the real fixture runs ten batches of a half-minute
	// run gave actor_get p95 0.61 of the error its halves show, six 0.70
	// (docs/figures.md "A run's own error").
	BatchMin = 4
	BatchMax = 6
)

// Batch is one time batch of a run's samples: how many, and its own
// estimate of the percentile.
type Batch struct {
	N uint64
	Q float64
}

// QuantileBatches groups time bins, in time order, into consecutive
// batches of about equal size for the percentile p: as many as the
// samples allow with BatchMinBeyond beyond p in each, at most BatchMax
// and at most one a non-empty bin. It returns nil when fewer than
// BatchMin batches can be formed. The bins are only read.
func QuantileBatches(bins []*Sketch, p float64) []Batch {
	if !(p > 0 && p < 1) {
		return nil
	}
	var n uint64
	nonEmpty := 0
	for _, b := range bins {
		if b != nil && b.Count() > 0 {
			n += b.Count()
			nonEmpty++
		}
	}
	tail := math.Min(p, 1-p)
	need := uint64(math.Ceil(BatchMinBeyond/tail - 1e-9)) // samples a batch needs
	want := min(BatchMax, nonEmpty, int(n/need))
	if want < BatchMin {
		return nil
	}
	// A batch closes once it holds the samples it needs and the samples
	// so far reach its share of the run; a batch left short joins a
	// neighbour.
	var sizes []uint64
	var sks []*Sketch
	cur := &Sketch{}
	var seen uint64
	for _, b := range bins {
		if b == nil || b.Count() == 0 {
			continue
		}
		cur.Merge(b)
		seen += b.Count()
		if cur.Count() >= need && float64(seen) >= float64(len(sks)+1)*float64(n)/float64(want)-1e-9 {
			sks = append(sks, cur)
			sizes = append(sizes, cur.Count())
			cur = &Sketch{}
		}
	}
	if cur.Count() > 0 {
		sks = append(sks, cur)
		sizes = append(sizes, cur.Count())
	}
	for i := 0; i < len(sks); {
		if sizes[i] >= need || len(sks) == 1 {
			i++
			continue
		}
		// Too small: merge into a neighbour (the previous, or the next
		// for the first batch) and look at the merged batch again.
		j := i - 1
		if j < 0 {
			j = 1
		}
		lo, hi := min(i, j), max(i, j)
		sks[lo].Merge(sks[hi])
		sizes[lo] += sizes[hi]
		sks = append(sks[:hi], sks[hi+1:]...)
		sizes = append(sizes[:hi], sizes[hi+1:]...)
		i = lo
	}
	if len(sks) < BatchMin {
		return nil
	}
	out := make([]Batch, len(sks))
	for i, s := range sks {
		out[i] = Batch{N: s.Count(), Q: s.Quantile(p)}
	}
	return out
}

// BatchLogSE is the standard error of ln q, the percentile q of all the
// batches' samples together, by sectioning: with n_b samples and
// percentile q_b in batch b of B, and N samples in all,
//
//	Var(ln q) = Σ n_b (ln q_b − ln q)² / ((B − 1) · N)
//
// on df = B − 1 degrees of freedom. It assumes only that batches far
// enough apart in time are nearly independent, not that samples are.
// ok is false with fewer than BatchMin batches or a value that is not
// positive.
func BatchLogSE(batches []Batch, q float64) (se float64, df int, ok bool) {
	if len(batches) < BatchMin || !(q > 0) {
		return 0, 0, false
	}
	lq := math.Log(q)
	var n, ss float64
	for _, b := range batches {
		if !(b.Q > 0) {
			return 0, 0, false
		}
		d := math.Log(b.Q) - lq
		ss += float64(b.N) * d * d
		n += float64(b.N)
	}
	df = len(batches) - 1
	return math.Sqrt(ss / float64(df) / n), df, true
}

// BatchQuantileCI is the interval exp(ln q ± z·se) of the run's
// percentile q (p of its samples), se BatchLogSE over the time bins
// grouped by QuantileBatches; ok is false when the bins do not form
// enough batches. The multiplier is the normal quantile, not Student's
// on the batches' degrees of freedom: the interval is read back as
// ln q ± z·se by every judge (LogSEOfInterval), which wants se itself,
// and a run's interval is never narrower than its order-statistic one
// (RunQuantileCI), which guards against a batch estimate that comes out
// too small by chance.
func BatchQuantileCI(bins []*Sketch, p, q, confidence float64) (lo, hi float64, ok bool) {
	if !(confidence > 0 && confidence < 1) {
		return 0, 0, false
	}
	se, _, ok := BatchLogSE(QuantileBatches(bins, p), q)
	if !ok {
		return 0, 0, false
	}
	h := NormalQuantile(1-(1-confidence)/2) * se
	return q * math.Exp(-h), q * math.Exp(h), true
}

// RunQuantileCI is a run's own interval of its percentile q (p of its
// samples): the wider of its order-statistic interval [lo, hi] (when
// ok), which holds for independent samples, and BatchQuantileCI over
// its time bins, which holds when slow samples come in bursts.
func RunQuantileCI(lo, hi float64, ok bool, bins []*Sketch, p, q, confidence float64) (float64, float64, bool) {
	blo, bhi, bok := BatchQuantileCI(bins, p, q, confidence)
	return WiderInterval(lo, hi, ok, blo, bhi, bok)
}

// WiderInterval is the wider, in log, of two intervals of a positive
// figure: a run's own error is the larger of what independent samples
// give and what its time batches show, since the batches' estimate is
// itself noisy. An interval with ok false is not considered.
func WiderInterval(lo1, hi1 float64, ok1 bool, lo2, hi2 float64, ok2 bool) (lo, hi float64, ok bool) {
	switch {
	case !ok2:
		return lo1, hi1, ok1
	case !ok1:
		return lo2, hi2, true
	}
	if logWidth(lo2, hi2) > logWidth(lo1, hi1) {
		return lo2, hi2, true
	}
	return lo1, hi1, true
}

// logWidth is ln(hi/lo); +Inf when lo is not positive, so an interval
// reaching zero counts as the widest.
func logWidth(lo, hi float64) float64 {
	if !(lo > 0) {
		return math.Inf(1)
	}
	return math.Log(hi / lo)
}
