package simulate

import (
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/k6"
)

// request is one drawn request: when it started (seconds into the run),
// which of the model's endpoints it went to, its latency in ms and
// whether it failed.
type request struct {
	at     float64
	ep     int
	ms     float64
	failed bool
}

// drawn is one run's requests and iteration count, with the model and
// options they were drawn under (factors and run-level effect applied).
type drawn struct {
	model    Model
	opts     Options
	requests []request
	iters    int
}

// draw draws the requests and iterations of one run for Run: requests
// arrive at the scaled rate (a Poisson stream unless o.Variance makes
// them more regular or drains the run's end), each to an endpoint by
// the mix, with a log-normal latency scaled by the endpoint's factors
// and, when o.Variance has bursts, by the endpoint's burst state at that
// moment; iterations arrive as a Poisson stream as Write draws them
// (drawn after the requests, so the requests do not depend on them).
func (m *Model) draw(o Options) (drawn, error) {
	cp := *m
	cp.Endpoints = slices.Clone(m.Endpoints)
	o, err := o.resolve(&cp)
	if err != nil {
		return drawn{}, err
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
	end, gap := o.Variance.arrivals(rng, rate, secs)
	bursts := o.Variance.Burst.draw(o.Seed, secs)
	var reqs []request
	for t := gap(); t < end; t += gap() {
		i := min(sort.SearchFloat64s(cum, rng.Float64()*acc), len(cp.Endpoints)-1)
		e := cp.Endpoints[i]
		ms := e.latency(rng, bursts, t)
		failed := o.ErrorRate > 0 && rng.Float64() < o.ErrorRate
		reqs = append(reqs, request{at: t, ep: i, ms: ms, failed: failed})
	}
	iters := 0
	if ir := cp.IterRate * o.ThroughputFactor; ir > 0 {
		for t := rng.ExpFloat64() / ir; t < secs; t += rng.ExpFloat64() / ir {
			iters++
		}
	}
	return drawn{model: cp, opts: o, requests: reqs, iters: iters}, nil
}

// Run draws one run of the model straight into its figures, as the
// figures package reads them from an NDJSON file: the same requests,
// mix, latencies, failures and run-level effect Write draws for the
// options (a different random stream, so not the same values), with
// statistics by k6's percentile formula, each percentile's interval
// the wider of the order-statistic interval and the one from the run's
// batches over time (figures.FromTimedSamples), and the halves with
// their p95 errors (figures.HalvesOf), each request timed as Write
// stamps it. Power measurements that need hundreds of runs take this
// path; writing and parsing NDJSON costs over a second a run.
func (m *Model) Run(o Options, source string) (figures.Run, error) {
	d, err := m.draw(o)
	if err != nil {
		return figures.Run{}, err
	}
	cp, o := &d.model, d.opts
	secs := o.Duration.Seconds()
	start := o.start()
	n := len(d.requests)
	all := make([]float64, 0, n)
	times := make([]int64, 0, n)
	per := make([][]float64, len(cp.Endpoints))
	perTimes := make([][]int64, len(cp.Endpoints))
	failed := 0
	for _, q := range d.requests {
		if q.failed {
			failed++
		}
		at := stamp(start, q.at).UnixNano()
		all, times = append(all, q.ms), append(times, at)
		per[q.ep], perTimes[q.ep] = append(per[q.ep], q.ms), append(perTimes[q.ep], at)
	}
	r := figures.Run{Source: source, DurationSeconds: figures.Round(secs), Requests: int64(n), RPS: figures.Round(float64(n) / secs),
		Failed: int64(failed), Checked: int64(n),
		Workload:   figures.Workload{VUs: cp.VUs},
		Provenance: figures.Source{File: source, Format: string(k6.FormatNDJSON), Start: start, End: start.Add(o.Duration), TestID: o.TestID}}
	if iters := d.iters; iters > 0 {
		r.Iterations, r.IterationsPerS = int64(iters), figures.Round(float64(iters)/secs)
		r.RequestsPerIter = figures.Round(float64(n) / float64(iters))
	}
	r.SetAggregate(figures.FromTimedSamples(all, times))
	for i, e := range cp.Endpoints {
		if len(per[i]) == 0 {
			continue
		}
		if r.Endpoints == nil {
			r.Endpoints = map[string]figures.Latency{}
		}
		r.Endpoints[e.Key] = figures.FromTimedSamples(per[i], perTimes[i])
	}
	r.Halves = figures.HalvesOf(times, all)
	return r, nil
}

// start is when the run starts: o.Start, or 2026-01-01 UTC.
func (o Options) start() time.Time {
	if o.Start.IsZero() {
		return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return o.Start
}

// stamp is the time Write gives a request t seconds into a run that
// starts at start.
func stamp(start time.Time, t float64) time.Time {
	return start.Add(time.Duration(t * float64(time.Second)))
}
