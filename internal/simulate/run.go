package simulate

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Run draws one run of the model straight into a k6 run, as the loader
// gives an NDJSON file read with its points: the same requests, mix,
// latencies, failures and run-level effect Write draws for the options
// (a different random stream, so not the same values), with statistics
// by k6's percentile formula. Power measurements that need hundreds of
// runs take this path; writing and parsing NDJSON costs over a second a
// run. Only http_req_duration points (tagged as k6 tags them) and the
// endpoints' custom trend points are kept.
func (m *Model) Run(o Options, source string) (*k6.Run, error) {
	cp := *m
	cp.Endpoints = slices.Clone(m.Endpoints)
	o, err := o.resolve(&cp)
	if err != nil {
		return nil, err
	}
	start := o.Start
	if start.IsZero() {
		start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x696e6d656d6f7279))
	secs := o.Duration.Seconds()
	rate := cp.Rate * o.ThroughputFactor
	cum := make([]float64, len(cp.Endpoints))
	tags := make([]map[string]string, len(cp.Endpoints))
	var acc float64
	for i, e := range cp.Endpoints {
		acc += e.Share
		cum[i] = acc
		tags[i] = map[string]string{}
		for _, kv := range e.tags(false) {
			tags[i][kv[0]] = kv[1]
		}
	}
	var all []float64
	per := make([][]float64, len(cp.Endpoints))
	var points []k6.Point
	failed := 0
	for t := rng.ExpFloat64() / rate; t < secs; t += rng.ExpFloat64() / rate {
		i := min(sort.SearchFloat64s(cum, rng.Float64()*acc), len(cp.Endpoints)-1)
		e := cp.Endpoints[i]
		ms := math.Exp(e.Mu+e.Sigma*rng.NormFloat64()) * e.LatencyScale
		if o.ErrorRate > 0 && rng.Float64() < o.ErrorRate {
			failed++
		}
		ts := start.Add(time.Duration(t * float64(time.Second)))
		all = append(all, ms)
		per[i] = append(per[i], ms)
		points = append(points, k6.Point{Metric: k6.HTTPReqDuration, Time: ts, Value: ms, Tags: tags[i]})
		if e.Metric != "" {
			points = append(points, k6.Point{Metric: e.Metric, Time: ts, Value: ms})
		}
	}
	n := len(all)
	// Iterations arrive as a Poisson stream, as Write draws them (drawn
	// after the requests, so the requests do not depend on them).
	iters := 0
	if ir := cp.IterRate * o.ThroughputFactor; ir > 0 {
		for t := rng.ExpFloat64() / ir; t < secs; t += rng.ExpFloat64() / ir {
			iters++
		}
	}
	r := &k6.Run{Source: source, Format: k6.FormatNDJSON, Mode: k6.ModeExact, Start: start, End: start.Add(o.Duration), Duration: o.Duration, Points: points,
		Metrics: map[string]*k6.Metric{
			"http_reqs":        {Name: "http_reqs", Parent: "http_reqs", Type: k6.Counter, Values: map[string]float64{"count": float64(n), "rate": float64(n) / secs}},
			"iterations":       {Name: "iterations", Parent: "iterations", Type: k6.Counter, Values: map[string]float64{"count": float64(iters), "rate": float64(iters) / secs}},
			"http_req_failed":  {Name: "http_req_failed", Parent: "http_req_failed", Type: k6.Rate, Values: map[string]float64{"passes": float64(failed), "fails": float64(n - failed), "rate": float64(failed) / math.Max(1, float64(n))}},
			k6.HTTPReqDuration: trend(k6.HTTPReqDuration, all),
			"vus_max":          {Name: "vus_max", Parent: "vus_max", Type: k6.Gauge, Values: map[string]float64{"value": float64(cp.VUs), "min": float64(cp.VUs), "max": float64(cp.VUs)}},
		}}
	for i, e := range cp.Endpoints {
		switch {
		case e.Metric != "":
			r.Metrics[e.Metric] = trend(e.Metric, per[i])
		case e.Tag != "":
			name := "http_req_duration{" + e.Tag + ":" + e.Value + "}"
			mt := trend(name, per[i])
			mt.Parent, mt.Tags = k6.HTTPReqDuration, map[string]string{e.Tag: e.Value}
			r.Metrics[name] = mt
		}
	}
	return r, nil
}

// trend is a trend metric of xs (sorted in place) with the statistics
// the loader computes for point files read with p(99) and count.
func trend(name string, xs []float64) *k6.Metric {
	slices.Sort(xs)
	m := &k6.Metric{Name: name, Parent: name, Type: k6.Trend, Contains: k6.Time, Mode: k6.ModeExact, Values: map[string]float64{"count": float64(len(xs))}}
	if len(xs) == 0 {
		return m
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	m.Values["avg"] = sum / float64(len(xs))
	m.Values["min"], m.Values["max"] = xs[0], xs[len(xs)-1]
	for st, p := range map[string]float64{"med": 0.5, "p(90)": 0.9, "p(95)": 0.95, "p(99)": 0.99} {
		m.Values[st] = stats.Quantile(xs, p)
	}
	return m
}
