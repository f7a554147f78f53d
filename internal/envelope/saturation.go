package envelope

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// saturation judges whether the runs were below saturation by four signs:
// throughput degradation, latency inflation, error emergence and dropped
// iterations (an arrival rate the VUs could not keep). It says "below
// saturation" only when none is seen and there were enough runs to see
// them, and gives the figures either way.
func saturation(env *Envelope, runs []figures.Run, conf float64) Saturation {
	var signs, clear []string
	n := len(env.Runs)

	// Throughput degradation: spread across runs, then runs in time order.
	if t := env.Throughput; t.N >= 2 {
		if t.CV > SaturationMaxCV {
			signs = append(signs, fmt.Sprintf("throughput degradation: throughput varies %.2f%% (CV) across %d runs, above %.0f%%", 100*t.CV, n, 100*SaturationMaxCV))
		} else {
			clear = append(clear, fmt.Sprintf("no throughput degradation: throughput CV %.2f%% across %d runs (limit %.0f%%), %.2f–%.2f req/s", 100*t.CV, n, 100*SaturationMaxCV, t.Min, t.Max))
		}
	}
	if d, ok := orderedDrop(runs); ok && d > SaturationMaxDrift {
		signs = append(signs, fmt.Sprintf("throughput degradation: the last run (by start time) is %.1f%% below the first", 100*d))
	}

	// Latency inflation: band width against its level.
	l := env.Latency
	if l.P95.N >= 2 && l.P95.Min > 0 {
		w95 := (l.P95.Max - l.P95.Min) / l.P95.Min
		w99 := 0.0
		if l.P99.N >= 2 && l.P99.Min > 0 {
			w99 = (l.P99.Max - l.P99.Min) / l.P99.Min
		}
		if w95 > SaturationMaxBandWidth || w99 > SaturationMaxBandWidth {
			signs = append(signs, fmt.Sprintf("latency inflation: the p95 band spans %.1f%% and the p99 band %.1f%% of their lower ends, above %.0f%%", 100*w95, 100*w99, 100*SaturationMaxBandWidth))
		} else {
			clear = append(clear, fmt.Sprintf("no broad latency inflation: the p95 band spans %.1f%% and the p99 band %.1f%% of their lower ends (limit %.0f%%)", 100*w95, 100*w99, 100*SaturationMaxBandWidth))
		}
	}

	// Within runs, when the points are there: later half against earlier.
	d := withinRuns(runs, conf)
	signs = append(signs, d.signs...)
	if d.runs > 0 && len(d.signs) == 0 {
		clear = append(clear, d.clear())
	}
	halves := d.runs > 0

	// Error emergence.
	if e := env.Errors; e.Failed > 0 {
		signs = append(signs, fmt.Sprintf("error emergence: %d of %d requests failed (%.3f%%)", e.Failed, e.Total, 100*e.Rate))
	} else {
		clear = append(clear, fmt.Sprintf("no error emergence: 0 of %d requests failed in %d runs", e.Total, n))
	}
	var dropped int64
	for _, r := range runs {
		dropped += r.DroppedIterations
	}
	if dropped > 0 {
		signs = append(signs, fmt.Sprintf("dropped iterations: k6 could not start %d iterations (the arrival rate outran the VUs)", dropped))
	}

	switch {
	case len(signs) > 0:
		return Saturation{Verdict: "signs of saturation", Reasons: signs}
	case n < 2 && !halves:
		return Saturation{Verdict: "inconclusive", Reasons: append([]string{"a single run shows no run-to-run degradation or inflation either way"}, clear...)}
	default:
		return Saturation{BelowSaturation: true, Verdict: "below saturation", Reasons: clear}
	}
}

// orderedDrop is the relative throughput drop from the first to the last
// run in start-time order, when every run's start is known.
func orderedDrop(runs []figures.Run) (float64, bool) {
	if len(runs) < 2 {
		return 0, false
	}
	rs := slices.Clone(runs)
	for _, r := range rs {
		if r.Provenance.Start.IsZero() {
			return 0, false
		}
	}
	slices.SortFunc(rs, func(a, b figures.Run) int { return a.Provenance.Start.Compare(b.Provenance.Start) })
	first, last := rs[0].RPS, rs[len(rs)-1].RPS
	if first <= 0 {
		return 0, false
	}
	return (first - last) / first, true
}

// driftPower is the power at which the within-run tests' minimal
// detectable change is given.
const driftPower = 0.8

// drift is what the runs' halves show: the signs of a rise of p95 or a
// drop of throughput from a run's first half to its second beyond their
// sampling error, and the smallest of each the runs could have shown.
type drift struct {
	signs []string
	runs  int // runs with halves
	// level is the one-sided level each test is taken at.
	level float64
	// The smallest and largest minimal detectable p95 rise and
	// throughput drop of one run, and of the runs together (pooled, NaN
	// for one run).
	p95Runs         int
	p95Lo, p95Hi    float64
	rateLo, rateHi  float64
	p95All, rateAll float64
}

// withinRuns tests each run's second half against its first, and all
// the runs' halves together (a drift every run shares, each too small
// to show alone): p95 (each half with its own error, from its samples
// without assuming independent requests) for a rise, and the request
// rate (a count with Poisson or wider error) for a drop. Each test is
// one-sided at the envelope's confidence shared over the tests
// (Bonferroni), so that clean runs show no sign at that confidence
// however many there are.
func withinRuns(runs []figures.Run, conf float64) drift {
	d := drift{p95Lo: math.Inf(1), rateLo: math.Inf(1), p95All: math.NaN(), rateAll: math.NaN()}
	for _, r := range runs {
		if r.Halves != nil {
			d.runs++
		}
	}
	if d.runs == 0 {
		return d
	}
	tests := d.runs
	if d.runs > 1 {
		tests++
	}
	d.level = 1 - (1-conf)/float64(tests)
	z := stats.NormalQuantile(d.level)
	zmdc := z + stats.NormalQuantile(driftPower)
	var p95, rate pooled
	for _, r := range runs {
		h := r.Halves
		if h == nil {
			continue
		}
		if x, se, ok := h.P95LogRatio(); ok {
			p95.add(x, se)
			mdc := math.Expm1(zmdc * se)
			d.p95Runs++
			d.p95Lo, d.p95Hi = min(d.p95Lo, mdc), max(d.p95Hi, mdc)
			if x > z*se {
				d.signs = append(d.signs, fmt.Sprintf("latency inflation within %s: p95 of the second half is %.1f%% above the first, beyond its sampling error (a rise above %.1f%% is one: one-sided test at %s)",
					r.Source, 100*math.Expm1(x), 100*math.Expm1(z*se), levelText(d.level)))
			}
		}
		x, se := h.RateLogRatio()
		rate.add(x, se)
		mdc := -math.Expm1(-zmdc * se)
		d.rateLo, d.rateHi = min(d.rateLo, mdc), max(d.rateHi, mdc)
		if -x > z*se {
			d.signs = append(d.signs, fmt.Sprintf("throughput degradation within %s: the second half ran %.1f%% below the first, beyond its sampling error (a drop above %.1f%% is one: one-sided test at %s)",
				r.Source, -100*math.Expm1(x), -100*math.Expm1(-z*se), levelText(d.level)))
		}
	}
	if d.runs < 2 {
		return d
	}
	if x, se, ok := p95.mean(); ok && p95.n > 1 {
		d.p95All = math.Expm1(zmdc * se)
		if x > z*se {
			d.signs = append(d.signs, fmt.Sprintf("latency inflation within runs: p95 of the second halves is %.1f%% above the first halves over %s together, beyond their sampling error (a rise above %.1f%% is one: one-sided test at %s)",
				100*math.Expm1(x), runsText(p95.n), 100*math.Expm1(z*se), levelText(d.level)))
		}
	}
	if x, se, ok := rate.mean(); ok {
		d.rateAll = -math.Expm1(-zmdc * se)
		if -x > z*se {
			d.signs = append(d.signs, fmt.Sprintf("throughput degradation within runs: the second halves ran %.1f%% below the first halves over %s together, beyond their sampling error (a drop above %.1f%% is one: one-sided test at %s)",
				-100*math.Expm1(x), runsText(rate.n), -100*math.Expm1(-z*se), levelText(d.level)))
		}
	}
	return d
}

// pooled is the inverse-variance mean of several runs' log ratios.
type pooled struct {
	n       int
	sw, swx float64
}

func (p *pooled) add(x, se float64) {
	if !(se > 0) {
		return
	}
	w := 1 / (se * se)
	p.n++
	p.sw += w
	p.swx += w * x
}

// mean is the pooled log ratio and its standard error.
func (p *pooled) mean() (x, se float64, ok bool) {
	if p.n == 0 {
		return 0, 0, false
	}
	return p.swx / p.sw, 1 / math.Sqrt(p.sw), true
}

// clear is the reason no run drifted: what was tested, and how large a
// rise of p95 and drop of throughput the runs could have shown.
func (d drift) clear() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no drift within runs: no run's second half has a higher p95 or a lower throughput than its first beyond their sampling error")
	if d.runs > 1 {
		b.WriteString(", alone or with the other runs")
	}
	fmt.Fprintf(&b, " (one-sided tests at %s, %s)", levelText(d.level), runsText(d.runs))
	var could []string
	if d.p95Runs > 0 {
		could = append(could, "a p95 rise of "+pctRange(d.p95Lo, d.p95Hi))
	}
	could = append(could, "a throughput drop of "+pctRange(d.rateLo, d.rateHi))
	fmt.Fprintf(&b, "; a run's halves could have shown %s", strings.Join(could, " and "))
	if !math.IsNaN(d.rateAll) {
		could = could[:0]
		if !math.IsNaN(d.p95All) {
			could = append(could, fmt.Sprintf("%.1f%%", 100*d.p95All))
		}
		could = append(could, fmt.Sprintf("%.1f%%", 100*d.rateAll))
		fmt.Fprintf(&b, ", all the runs' together %s", strings.Join(could, " and "))
	}
	fmt.Fprintf(&b, " (%.0f%% power)", 100*driftPower)
	if d.p95Runs < d.runs {
		fmt.Fprintf(&b, "; the p95 of %s had no error to test with", runsText(d.runs-d.p95Runs))
	}
	return b.String()
}

// runsText is "1 run" or "n runs".
func runsText(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

// levelText is a test's level as a percentage, with the digits it needs.
func levelText(level float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", 100*level), "0"), ".") + "%"
}

// pctRange is "x%" or "x–y%" of relative changes.
func pctRange(lo, hi float64) string {
	if math.Round(1000*lo) == math.Round(1000*hi) {
		return fmt.Sprintf("%.1f%%", 100*lo)
	}
	return fmt.Sprintf("%.1f–%.1f%%", 100*lo, 100*hi)
}
