package simulate

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Run draws one run of the model straight into its figures, as the
// figures package reads them from an NDJSON file: the same requests,
// mix, latencies, failures and run-level effect Write draws for the
// options (a different random stream, so not the same values), with
// statistics by k6's percentile formula and each percentile's
// order-statistic interval. Power measurements that need hundreds of
// runs take this path; writing and parsing NDJSON costs over a second a
// run.
func (m *Model) Run(o Options, source string) (figures.Run, error) {
	cp := *m
	cp.Endpoints = slices.Clone(m.Endpoints)
	o, err := o.resolve(&cp)
	if err != nil {
		return figures.Run{}, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x696e6d656d6f7279))
	secs := o.Duration.Seconds()
	rate := cp.Rate * o.ThroughputFactor
	cum := make([]float64, len(cp.Endpoints))
	var acc float64
	for i, e := range cp.Endpoints {
		acc += e.Share
		cum[i] = acc
	}
	var all []float64
	var allSum float64
	per := make([][]float64, len(cp.Endpoints))
	sums := make([]float64, len(cp.Endpoints))
	var halves [2][]float64
	failed := 0
	for t := rng.ExpFloat64() / rate; t < secs; t += rng.ExpFloat64() / rate {
		i := min(sort.SearchFloat64s(cum, rng.Float64()*acc), len(cp.Endpoints)-1)
		e := cp.Endpoints[i]
		ms := math.Exp(e.Mu+e.Sigma*rng.NormFloat64()) * e.LatencyScale
		if o.ErrorRate > 0 && rng.Float64() < o.ErrorRate {
			failed++
		}
		all = append(all, ms)
		allSum += ms
		per[i] = append(per[i], ms)
		sums[i] += ms
		h := 0
		if t >= secs/2 {
			h = 1
		}
		halves[h] = append(halves[h], ms)
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
	start := o.Start
	if start.IsZero() {
		start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	r := figures.Run{Source: source, DurationSeconds: figures.Round(secs), Requests: int64(n), RPS: figures.Round(float64(n) / secs),
		Failed: int64(failed), Checked: int64(n),
		Workload:   figures.Workload{VUs: cp.VUs},
		Provenance: figures.Source{File: source, Format: string(k6.FormatNDJSON), Start: start, End: start.Add(o.Duration), TestID: o.TestID}}
	if iters > 0 {
		r.Iterations, r.IterationsPerS = int64(iters), figures.Round(float64(iters)/secs)
		r.RequestsPerIter = figures.Round(float64(n) / float64(iters))
	}
	slices.Sort(all)
	r.SetAggregate(figures.FromSamples(all, allSum))
	for i, e := range cp.Endpoints {
		if len(per[i]) == 0 {
			continue
		}
		if r.Endpoints == nil {
			r.Endpoints = map[string]figures.Latency{}
		}
		slices.Sort(per[i])
		r.Endpoints[e.Key] = figures.FromSamples(per[i], sums[i])
	}
	if secs >= 20 && len(halves[0]) >= 20 && len(halves[1]) >= 20 {
		h := &figures.Halves{}
		for i, xs := range halves {
			slices.Sort(xs)
			h.Requests[i], h.P95[i] = int64(len(xs)), stats.Quantile(xs, 0.95)
		}
		r.Halves = h
	}
	return r, nil
}
