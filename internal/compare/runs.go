package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// figure is a figure to judge, with the tolerance that applies to it.
func (c *comparer) figure(k figures.Key, label string, tol float64) Figure {
	d := k.Figure.Def()
	return Figure{Name: k.Figure, Endpoint: k.Endpoint, EndpointLabel: label, Unit: d.Unit, Better: d.Polarity.Better(),
		TolerancePct: 100 * tol, P: math.NaN()}
}

// tolerance is the relative tolerance of a figure.
func (c *comparer) tolerance(n figures.Name) float64 {
	t, _ := c.tol.Relative(n)
	return t
}

// baseValues are the baseline runs' values of figure k with their own
// sampling variance where the envelope keeps it.
func (c *comparer) baseValues(k figures.Key) []stats.RunValue {
	base, _ := figures.Baseline(c.base, k)
	return base
}

// candValues are the candidates' values of figure k with their own
// sampling variance, and the candidates that lack it.
func (c *comparer) candValues(k figures.Key) (vals []stats.RunValue, missing []string) {
	for i := range c.cand {
		v, ok := c.cand[i].RunValue(k)
		if !ok || !(v.X > 0) {
			missing = append(missing, c.cand[i].Source)
			continue
		}
		vals = append(vals, v)
	}
	return vals, missing
}

// unestimated says why f, a percentile, cannot be judged from these
// runs: a baseline or candidate run has fewer requests of its trend than
// the percentile needs (figures.Support). It is "" when every run with a
// known count estimates it, and for every other figure.
func (c *comparer) unestimated(f *Figure) string {
	s := figures.SupportOf(c.base, f.Endpoint).Join(figures.SupportOf(c.cand, f.Endpoint))
	who := "the runs"
	if f.Endpoint != "" {
		who = f.Endpoint
		if f.EndpointLabel != "" {
			who = f.EndpointLabel
		}
	}
	why := s.Shortfall(f.Name, who)
	if instead := s.Instead(f.Name); why != "" && instead != "" {
		why += ", or judge " + instead
	}
	return why
}

// headlineFigure compares an aggregate figure from every baseline run's
// value with every candidate's: a two-level model on the log scale in
// which a run varies by the between-run spread the baseline runs showed
// plus its own sampling error, where its counts (a rate's) or intervals
// (a percentile's) tell it; or the percentile bootstrap over runs.
func (c *comparer) headlineFigure(n figures.Name) {
	k := figures.Key{Figure: n}
	f := c.figure(k, "", c.tolerance(n))
	base := c.baseValues(k)
	cand, missing := c.candValues(k)
	switch {
	case len(base) < 2:
		f.Verdict, f.Note = NoData, fmt.Sprintf("the envelope keeps %s for %d baseline run(s); 2 are needed", n.Def().Label, len(base))
	case len(missing) > 0:
		f.Verdict, f.Note = NoData, fmt.Sprintf("no %s in %s", n.Def().Label, strings.Join(missing, ", "))
	default:
		c.runLevel(&f, base, cand)
	}
	c.res.Figures = append(c.res.Figures, f)
}

// runLevel judges f from per-run values.
func (c *comparer) runLevel(f *Figure, base, cand []stats.RunValue) {
	r, err := c.levelCI(base, cand)
	if err != nil {
		f.Verdict, f.Note = NoData, err.Error()
		return
	}
	f.Baseline, f.Candidate = geoMeanOf(base), geoMeanOf(cand)
	f.Method = ""
	c.judge(f, r, f.Better, f.TolerancePct/100)
}

// geoMeanOf is the geometric mean of the runs' values.
func geoMeanOf(vs []stats.RunValue) float64 {
	xs := make([]float64, len(vs))
	for i, v := range vs {
		xs[i] = v.X
	}
	return stats.GeoMean(xs)
}

// levelCI is the interval of the change from base to cand: the
// run-level log model, or the bootstrap over the runs' values.
func (c *comparer) levelCI(base, cand []stats.RunValue) (stats.RatioCI, error) {
	if c.method != "bootstrap" {
		return c.judging.interval(base, cand, c.tol.Confidence)
	}
	bv, cv := make([]float64, len(base)), make([]float64, len(cand))
	for i, b := range base {
		bv[i] = b.X
	}
	for i, x := range cand {
		cv[i] = x.X
	}
	return stats.BootstrapLog(bv, cv, c.tol.Confidence, 10000, c.seed+uint64(len(c.res.Figures)))
}

// endpointFigure compares an endpoint's median, p95 or p99 from every
// baseline run's value, its median against the run's other endpoints
// (againstOthers). An envelope that keeps only the endpoint's band (a
// file written before each run's values were kept) gives the baseline
// as log-normal with mean of logs at the band's geometric centre and the
// standard deviation of logs from the range (ln max − ln min)/d2(n),
// the classic range estimator. It reports whether the candidates carry
// the endpoint at all.
func (c *comparer) endpointFigure(k figures.Key) bool {
	ep := c.env.Endpoints[k.Endpoint]
	f := c.figure(k, ep.Label, c.tolerance(k.Figure))
	band := ep.Band(k.Figure)
	cand, missing := c.candValues(k)
	present := len(missing) < len(c.cand)
	base := c.baseValues(k)
	switch {
	case band.N < 2 || !(band.Min > 0) || band.Max < band.Min:
		f.Verdict, f.Note = NoData, fmt.Sprintf("the envelope has no %s band over 2 or more runs for this endpoint", k.Figure)
	case len(missing) > 0:
		f.Verdict, f.Note = NoData, fmt.Sprintf("no %s for this endpoint in %s", k.Figure, strings.Join(missing, ", "))
	case len(base) >= 2:
		// Each baseline run's own value: the real run-to-run spread.
		if c.judging.against(k.Figure) && c.againstOthers(&f, k, cand) {
			break
		}
		c.runLevel(&f, base, cand)
	default:
		f.Method = "welch-log, baseline spread from the band range"
		f.Note = "the envelope keeps only this endpoint's band: run-to-run spread estimated from its range"
		if c.judging.against(k.Figure) {
			f.Note = joinNote(f.Note, "judged on its own, not against the run's other endpoints: the envelope keeps no run's endpoint values")
		}
		c.bandFigure(&f, band, cand)
	}
	c.res.Figures = append(c.res.Figures, f)
	return present
}

// bandFigure judges f against a band alone (see endpointFigure).
func (c *comparer) bandFigure(f *Figure, band envelope.Band, cand []stats.RunValue) {
	lmin, lmax := math.Log(band.Min), math.Log(band.Max)
	bm := stats.LogMoments{N: band.N, Mean: (lmin + lmax) / 2, SD: (lmax - lmin) / rangeD2(band.N)}
	cv := make([]float64, len(cand))
	for i, v := range cand {
		cv[i] = v.X
	}
	cm, err := stats.LogMomentsOf(cv)
	var r stats.RatioCI
	if err == nil {
		r, err = stats.WelchLog(bm, cm, c.tol.Confidence)
	}
	if err != nil {
		f.Verdict, f.Note = NoData, err.Error()
		return
	}
	f.Baseline, f.Candidate = math.Exp(bm.Mean), stats.GeoMean(cv)
	c.judge(f, r, f.Better, c.tol.LatencyRise)
}
