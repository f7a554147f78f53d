package simulate

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/k6"
)

// writeDrawn writes d's requests as Write writes requests: one NDJSON
// point file of the same requests Run takes its figures from.
func writeDrawn(t *testing.T, d drawn) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	s := &sink{w: bw, testid: d.opts.TestID}
	writeMetricLines(bw, &d.model)
	start := d.opts.start()
	for _, q := range d.requests {
		e := d.model.Endpoints[q.ep]
		ts, tags := stamp(start, q.at), e.tags(q.failed)
		s.point("http_reqs", ts, 1, tags)
		s.point(k6.HTTPReqDuration, ts, q.ms, tags)
		fv := 0.0
		if q.failed {
			fv = 1
		}
		s.point("http_req_failed", ts, fv, tags)
		if e.Metric != "" {
			s.point(e.Metric, ts, q.ms, [][2]string{})
		}
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return &b
}

// near says whether a and b agree to the figures' rounding.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// sameLatency names where two latency figures differ, percentiles and
// their intervals.
func sameLatency(what string, run, loaded figures.Latency) []string {
	var out []string
	if run.Count != loaded.Count {
		out = append(out, fmt.Sprintf("%s: %d samples, loaded %d", what, run.Count, loaded.Count))
	}
	for _, name := range figures.Percentiles() {
		v, ci := run.Stat(name)
		lv, lci := loaded.Stat(name)
		if !near(v, lv) {
			out = append(out, fmt.Sprintf("%s %s: %g, loaded %g", what, name, v, lv))
		}
		switch {
		case (ci == nil) != (lci == nil):
			out = append(out, fmt.Sprintf("%s %s interval: %v, loaded %v", what, name, ci, lci))
		case ci != nil && (!near(ci.Low, lci.Low) || !near(ci.High, lci.High)):
			out = append(out, fmt.Sprintf("%s %s interval: %g–%g, loaded %g–%g", what, name, ci.Low, ci.High, lci.Low, lci.High))
		}
	}
	return out
}

// Run's figures are the loader's figures of a point file of the same
// requests: every percentile with its interval (batch-widened where the
// requests cluster), the aggregate's and each endpoint's, and the halves
// with their p95 errors.
func TestRunAsLoaded(t *testing.T) {
	m, err := Fit(demoEnvelope(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name string
		v    Variance
	}{{"independent", Variance{}}, {"clustered", ClusteredVariance()}} {
		o := Options{Seed: 3, Duration: 2 * time.Minute, Variance: v.v}
		r, err := m.Run(o, "run")
		if err != nil {
			t.Fatal(err)
		}
		d, err := m.draw(o)
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := figures.ReadRun("run", writeDrawn(t, d), figures.LoadOptions(0, ""))
		if err != nil {
			t.Fatal(err)
		}
		bad := sameLatency(v.name+" aggregate", r.Aggregate(), loaded.Aggregate())
		if len(r.Endpoints) != len(loaded.Endpoints) {
			bad = append(bad, fmt.Sprintf("%s: %d endpoints, loaded %d", v.name, len(r.Endpoints), len(loaded.Endpoints)))
		}
		for k, e := range r.Endpoints {
			bad = append(bad, sameLatency(v.name+" "+k, e, loaded.Endpoints[k])...)
		}
		switch h, lh := r.Halves, loaded.Halves; {
		case h == nil || lh == nil:
			bad = append(bad, fmt.Sprintf("%s halves: %v, loaded %v", v.name, h, lh))
		default:
			for i := range h.P95 {
				if h.Requests[i] != lh.Requests[i] || !near(h.P95[i], lh.P95[i]) || !near(h.P95LogSE[i], lh.P95LogSE[i]) || h.P95LogSE[i] <= 0 {
					bad = append(bad, fmt.Sprintf("%s half %d: %d requests, p95 %g ± %g (log), loaded %d, %g ± %g", v.name, i+1,
						h.Requests[i], h.P95[i], h.P95LogSE[i], lh.Requests[i], lh.P95[i], lh.P95LogSE[i]))
				}
			}
		}
		for _, b := range bad {
			t.Error(b)
		}
	}
}

// widening is each percentile's interval width in log over its
// order-statistic interval's, by "series figure" (aggregate and
// endpoints), of two readings of one run's requests.
func widening(run, independent map[string]figures.Latency) map[string]float64 {
	out := map[string]float64{}
	for k, l := range run {
		for _, name := range figures.Percentiles() {
			_, ci := l.Stat(name)
			_, ici := independent[k].Stat(name)
			if ci == nil || ici == nil || !(ici.Low > 0) || ici.High <= ici.Low {
				continue
			}
			out[k+" "+string(name)] = math.Log(ci.High/ci.Low) / math.Log(ici.High/ici.Low)
		}
	}
	return out
}

// latencies are a run's aggregate and endpoint figures by name.
func latencies(r figures.Run) map[string]figures.Latency {
	out := map[string]figures.Latency{"aggregate": r.Aggregate()}
	for k, e := range r.Endpoints {
		out[k] = e
	}
	return out
}

// Run's intervals are of the kind Write's runs get from the loader:
// under ClusteredVariance the bursts widen the fast endpoint's median
// and p95 intervals well beyond the order-statistic ones in both, by
// about as much, and without bursts neither widens much. Each is the
// geometric mean over seeds 1–8 of the interval's log width over the
// order-statistic interval's.
func TestRunIntervalsAsWritten(t *testing.T) {
	m, err := Fit(demoEnvelope(t))
	if err != nil {
		t.Fatal(err)
	}
	series := []string{"actor_get median", "actor_get p95"}
	for _, v := range []struct {
		name     string
		v        Variance
		min, max float64
	}{{"independent", Variance{}, 1, 1.15}, {"clustered", ClusteredVariance(), 1.3, math.Inf(1)}} {
		var run, written float64
		n := 0
		for seed := uint64(1); seed <= 8; seed++ {
			o := Options{Seed: seed, Duration: 2 * time.Minute, Variance: v.v}
			r, err := m.Run(o, "run")
			if err != nil {
				t.Fatal(err)
			}
			d, err := m.draw(o)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := m.Write(&b, o); err != nil {
				t.Fatal(err)
			}
			opts := figures.LoadOptions(0, "")
			w, err := figures.ReadRun("run", bytes.NewReader(b.Bytes()), opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.IndependentIntervals = true
			wi, err := figures.ReadRun("run", bytes.NewReader(b.Bytes()), opts)
			if err != nil {
				t.Fatal(err)
			}
			rw, ww := widening(latencies(r), independentOf(d)), widening(latencies(w), latencies(wi))
			for _, s := range series {
				if rw[s] == 0 || ww[s] == 0 {
					t.Fatalf("%s seed %d: no %s interval", v.name, seed, s)
				}
				run, written = run+math.Log(rw[s]), written+math.Log(ww[s])
				n++
			}
		}
		run, written = math.Exp(run/float64(n)), math.Exp(written/float64(n))
		t.Logf("%s: intervals %.2f× the order-statistic ones in Run, %.2f× in Write's runs loaded", v.name, run, written)
		if run < v.min || run > v.max || written < v.min || written > v.max || math.Abs(math.Log(run/written)) > math.Log(1.25) {
			t.Errorf("%s: intervals %.2f× the order-statistic ones in Run, %.2f× in Write's runs loaded; want both in %.2f–%.2f and within 25%% of each other", v.name, run, written, v.min, v.max)
		}
	}
}

// independentOf are the figures of d's requests with order-statistic
// intervals alone, by aggregate and endpoint.
func independentOf(d drawn) map[string]figures.Latency {
	var all []float64
	per := map[string][]float64{}
	for _, q := range d.requests {
		k := d.model.Endpoints[q.ep].Key
		all, per[k] = append(all, q.ms), append(per[k], q.ms)
	}
	of := func(xs []float64) figures.Latency {
		var sum float64
		for _, x := range xs {
			sum += x
		}
		slices.Sort(xs)
		return figures.FromSamples(xs, sum)
	}
	out := map[string]figures.Latency{"aggregate": of(all)}
	for k, xs := range per {
		out[k] = of(xs)
	}
	return out
}
