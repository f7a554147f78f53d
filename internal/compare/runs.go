package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/stats"
)

// sampleConfidence is the level of the candidates' order-statistic
// intervals; only the standard error read back from them matters.
const sampleConfidence = 0.95

// runSamples are one candidate run's sorted latency samples, from its
// points (nil for summary files).
type runSamples struct {
	aggregate []float64
	endpoints map[string][]float64
}

// loadSamples gathers each candidate's samples once.
func (c *comparer) loadSamples() {
	c.samples = make([]runSamples, len(c.runs))
	for i, r := range c.runs {
		agg, per := envelope.Samples(r, c.env.Endpoints)
		c.samples[i] = runSamples{aggregate: agg, endpoints: per}
	}
}

// logVarOf is the sampling variance of ln(x) an interval at confidence
// says; NaN when there is none.
func logVarOf(ci *envelope.Interval, confidence float64) float64 {
	if ci == nil {
		return math.NaN()
	}
	se := stats.LogSEOfInterval(ci.Low, ci.High, confidence)
	return se * se
}

// envConfidence is the level the envelope's run intervals were computed at.
func (c *comparer) envConfidence() float64 {
	if v := c.env.Tolerance.Confidence; v > 0 && v < 1 {
		return v
	}
	return 0.95
}

// quantileOf maps a figure name to its probability.
func quantileOf(stat string) float64 {
	switch stat {
	case "p99":
		return 0.99
	case "median":
		return 0.5
	}
	return 0.95
}

// candValues pairs each candidate's value with the sampling variance of
// its log, from its samples (endpoint "" is the aggregate).
func (c *comparer) candValues(vals []float64, endpoint, stat string) []stats.RunValue {
	out := make([]stats.RunValue, len(vals))
	for j, v := range vals {
		out[j] = stats.RunValue{X: v, LogVar: c.sampleLogVar(j, endpoint, quantileOf(stat))}
	}
	return out
}

// sampleLogVar is the sampling variance of ln of candidate j's p
// quantile of an endpoint ("" is the aggregate), from its samples; NaN
// without them.
func (c *comparer) sampleLogVar(j int, endpoint string, p float64) float64 {
	if j >= len(c.samples) {
		return math.NaN()
	}
	xs := c.samples[j].aggregate
	if endpoint != "" {
		xs = c.samples[j].endpoints[endpoint]
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	return logVarOf(envelope.QuantileInterval(xs, p, sampleConfidence), sampleConfidence)
}

// baseValues are the baseline runs' values of a quantile figure with the
// sampling variance their intervals tell; endpoint "" is the aggregate.
func (c *comparer) baseValues(endpoint, stat string) []stats.RunValue {
	conf := c.envConfidence()
	var out []stats.RunValue
	for _, r := range c.env.Runs {
		var v float64
		var ci *envelope.Interval
		if endpoint == "" {
			switch stat {
			case "median":
				v = r.Median
			case "p99":
				v, ci = r.P99, r.P99CI
			default:
				v, ci = r.P95, r.P95CI
			}
		} else {
			v, ci = runEndpointStat(r, endpoint, stat)
		}
		if v > 0 {
			out = append(out, stats.RunValue{X: v, LogVar: logVarOf(ci, conf)})
		}
	}
	return out
}

// runEndpointStat is a baseline run's value of an endpoint statistic and
// its sampling interval (none for the median); 0 when the run lacks it.
func runEndpointStat(r envelope.RunFigures, name, stat string) (float64, *envelope.Interval) {
	re, ok := r.Endpoints[name]
	if !ok {
		return 0, nil
	}
	switch stat {
	case "median":
		return re.Median, nil
	case "p99":
		return re.P99, re.P99CI
	}
	return re.P95, re.P95CI
}

// runLevel judges f from per-run values: the run-level log model for
// Welch, or the bootstrap over runs.
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
	var l float64
	for _, v := range vs {
		l += math.Log(v.X)
	}
	return math.Exp(l / float64(len(vs)))
}

// levelCI is the interval of the change from base to cand: the
// run-level log model for Welch, or the bootstrap over runs.
func (c *comparer) levelCI(base, cand []stats.RunValue) (stats.RatioCI, error) {
	var r stats.RatioCI
	var err error
	if c.method == "bootstrap" {
		bv, cv := make([]float64, len(base)), make([]float64, len(cand))
		for i, b := range base {
			bv[i] = b.X
		}
		for i, x := range cand {
			cv[i] = x.X
		}
		r, err = stats.BootstrapLog(bv, cv, c.tol.Confidence, 10000, c.seed+uint64(len(c.res.Figures)))
	} else {
		r, err = c.judging.interval(base, cand, c.tol.Confidence)
	}
	return r, err
}

// quantileFigure compares the aggregate p95 or p99 from every baseline
// run's value, adding each run's sampling error where its samples or
// interval are known. The bootstrap keeps its own figure.
func (c *comparer) quantileFigure(stat, k6stat string) {
	if c.method == "bootstrap" {
		c.ratioFigure(stat, "", "ms", "lower", c.tol.LatencyRise,
			func(r envelope.RunFigures) float64 {
				switch stat {
				case "median":
					return r.Median
				case "p99":
					return r.P99
				}
				return r.P95
			}, candStat(nil, k6stat))
		return
	}
	f := Figure{Name: stat, Unit: "ms", Better: "lower", TolerancePct: 100 * c.tol.LatencyRise, P: math.NaN()}
	base := c.baseValues("", stat)
	cv, missing := c.candidates(candStat(nil, k6stat))
	switch {
	case len(base) < 2:
		f.Verdict, f.Note = NoData, fmt.Sprintf("the envelope keeps %s for %d baseline run(s); 2 are needed", stat, len(base))
	case len(missing) > 0:
		f.Verdict, f.Note = NoData, fmt.Sprintf("no %s in %s", stat, strings.Join(missing, ", "))
	default:
		c.runLevel(&f, base, c.candValues(cv, "", stat))
	}
	c.res.Figures = append(c.res.Figures, f)
}

// endpointRunValues are the baseline's per-run values of an endpoint
// figure; fewer than 2 when the envelope keeps only the band.
func (c *comparer) endpointRunValues(name, stat string) []stats.RunValue {
	return c.baseValues(name, stat)
}

// throughputFigure compares the request rate from every baseline run's
// value. A run's rate is a count over a fixed time, so its own sampling
// variance on the log scale is about 1/requests (Poisson); the between-run
// spread beyond that is what the runs showed. The bootstrap keeps its own
// figure.
func (c *comparer) throughputFigure() {
	if c.method == "bootstrap" {
		c.ratioFigure("throughput", "", "req/s", "higher", c.tol.ThroughputDrop,
			func(r envelope.RunFigures) float64 { return r.RPS }, candRPS)
		return
	}
	f := Figure{Name: "throughput", Unit: "req/s", Better: "higher", TolerancePct: 100 * c.tol.ThroughputDrop, P: math.NaN()}
	var base []stats.RunValue
	for _, r := range c.env.Runs {
		if r.RPS > 0 {
			base = append(base, stats.RunValue{X: r.RPS, LogVar: poissonLogVar(float64(r.Requests))})
		}
	}
	var cand []stats.RunValue
	var missing []string
	for _, r := range c.runs {
		v, ok := candRPS(r)
		if !ok {
			missing = append(missing, r.Source)
			continue
		}
		n := math.NaN()
		if m := r.Metrics["http_reqs"]; m != nil {
			if cnt, ok := m.Values["count"]; ok {
				n = cnt
			}
		}
		cand = append(cand, stats.RunValue{X: v, LogVar: poissonLogVar(n)})
	}
	switch {
	case len(base) < 2:
		f.Verdict, f.Note = NoData, fmt.Sprintf("the envelope keeps throughput for %d baseline run(s); 2 are needed", len(base))
	case len(missing) > 0:
		f.Verdict, f.Note = NoData, fmt.Sprintf("no throughput in %s", strings.Join(missing, ", "))
	default:
		c.runLevel(&f, base, cand)
	}
	c.res.Figures = append(c.res.Figures, f)
}

// poissonLogVar is the variance of ln(count) for a Poisson count, NaN
// when the count is unknown.
func poissonLogVar(n float64) float64 {
	if !(n > 0) {
		return math.NaN()
	}
	return 1 / n
}

// ThroughputMDC is the minimum detectable change of mean throughput
// (ratio) that compare gives for k candidate runs like the baseline's
// typical run (its geometric mean rate and mean request count): the
// figure a report can state before any later run exists. With one
// candidate it is what compare reports for a single run of that size.
// ok is false with fewer than 2 baseline runs.
func ThroughputMDC(env *envelope.Envelope, k int) (float64, bool) {
	var base []stats.RunValue
	var rates []float64
	var requests float64
	for _, r := range env.Runs {
		if r.RPS > 0 {
			base = append(base, stats.RunValue{X: r.RPS, LogVar: poissonLogVar(float64(r.Requests))})
			rates = append(rates, r.RPS)
			requests += float64(r.Requests)
		}
	}
	if len(base) < 2 || k < 1 {
		return 0, false
	}
	typical := stats.RunValue{X: geoMean(rates), LogVar: poissonLogVar(requests / float64(len(base)))}
	cand := make([]stats.RunValue, k)
	for i := range cand {
		cand[i] = typical
	}
	conf := env.Tolerance.Confidence
	if !(conf > 0 && conf < 1) {
		conf = 0.95
	}
	r, err := runLevelCI(base, cand, conf)
	if err != nil || math.IsNaN(r.MDC) {
		return 0, false
	}
	return r.MDC, true
}

// runLevelCI is the run-level interval compare judges by: on the runs'
// own n_base + n_cand − 2 degrees of freedom, since the between-run
// variance rests on them alone however much of a run's variance its
// samples explain (stats.RunLevelLog gives Satterthwaite's, which count
// the candidates' known sampling variance as exact).
func runLevelCI(base, cand []stats.RunValue, confidence float64) (stats.RatioCI, error) {
	r, err := stats.RunLevelLog(base, cand, confidence)
	if df := float64(len(base) + len(cand) - 2); err == nil && r.DF > df {
		r = r.WithDF(df)
	}
	return r, err
}
