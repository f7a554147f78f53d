// Package simulate writes k6-shaped NDJSON runs (--out json: Metric lines,
// then Point lines) consistent with an envelope: the request rate and
// iteration rate of its throughput bands, the request mix of its
// endpoints, and per-endpoint lognormal latency distributions fitted to
// the endpoint bands, optionally with an injected regression (slower
// endpoints, failed requests, lower throughput). Output is a pure
// function of the envelope, the options and the seed.
package simulate

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/k6"
)

// Options shape a simulated run.
type Options struct {
	Duration time.Duration
	Seed     uint64
	// LatencyFactor multiplies an endpoint's latencies ("*" = every endpoint).
	LatencyFactor map[string]float64
	// ErrorRate is the share of requests that fail (status 503).
	ErrorRate float64
	// ThroughputFactor multiplies the request and iteration rates (1 = envelope mean).
	ThroughputFactor float64
	TestID           string
	Start            time.Time // zero = 2026-01-01T00:00:00Z
	// Variance draws a run-level effect from Seed on top of the factors
	// above, and the run's within-run structure (RealVariance for runs
	// that differ as real runs do from run to run, ClusteredVariance for
	// runs whose slow requests also come together as real runs' do);
	// zero draws none.
	Variance Variance
}

// Endpoint is one endpoint's fitted model.
type Endpoint struct {
	Key          string
	Metric       string // custom trend, "" when none
	Tag, Value   string // http_req_duration tag selecting it
	Share        float64
	Mu, Sigma    float64 // lognormal of the latency in ms
	LatencyScale float64
}

// latency draws one request's latency (ms) at t seconds into the run:
// the endpoint's log-normal, plus a slow stretch's delay when t falls in
// one (bursts nil: none), scaled by the endpoint's factors.
func (e Endpoint) latency(rng *rand.Rand, bursts *bursts, t float64) float64 {
	base := math.Exp(e.Mu + e.Sigma*rng.NormFloat64())
	if bursts != nil {
		base += bursts.extra(t)
	}
	return base * e.LatencyScale
}

// Model is the fitted request mix and latency model of an envelope.
type Model struct {
	Rate, IterRate float64
	VUs            int
	Endpoints      []Endpoint
}

// Fit builds the model of env: lognormal latencies fitted per endpoint
// (least squares of log quantiles against normal scores over the median,
// p95 and p99 bands' midpoints, the average when fewer than two are
// known), and the request mix from the envelope's shares or, when it has
// none, fitted so the mixture reproduces the overall median, p95 and p99.
func Fit(env *envelope.Envelope) (*Model, error) {
	if env.Throughput.Mean <= 0 {
		return nil, errors.New("envelope: throughput.mean: missing field (the request rate to simulate)")
	}
	m := &Model{Rate: env.Throughput.Mean, IterRate: env.Iterations.Mean, VUs: env.Provenance.Workload.VUs}
	if m.IterRate <= 0 && env.RequestsPerIteration.Mean > 0 {
		m.IterRate = m.Rate / env.RequestsPerIteration.Mean
	}
	if m.VUs <= 0 {
		m.VUs = 1
	}
	keys := make([]string, 0, len(env.Endpoints))
	for k := range env.Endpoints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	haveShares := len(keys) > 0
	for _, k := range keys {
		ep := env.Endpoints[k]
		mu, sigma, err := fitLognormal(ep.Avg, ep.Median, ep.P95, ep.P99)
		if err != nil {
			return nil, fmt.Errorf("envelope: endpoints[%q]: %w", k, err)
		}
		e := Endpoint{Key: k, Metric: ep.Metric, Tag: ep.Tag, Value: ep.Value, Share: ep.Share, Mu: mu, Sigma: sigma, LatencyScale: 1}
		if e.Share <= 0 {
			haveShares = false
		}
		m.Endpoints = append(m.Endpoints, e)
	}
	if len(m.Endpoints) == 0 {
		// No endpoints: one anonymous endpoint fitted to the overall bands.
		l := env.Latency
		mu, sigma, err := fitLognormal(l.Avg, l.Median, l.P95, l.P99)
		if err != nil {
			return nil, fmt.Errorf("envelope: latency: %w", err)
		}
		m.Endpoints = []Endpoint{{Key: "default", Tag: "name", Value: "default", Share: 1, Mu: mu, Sigma: sigma, LatencyScale: 1}}
		haveShares = true
	}
	if !haveShares {
		fitShares(m, env.Latency, requestsPerRun(env))
	}
	var sum float64
	for _, e := range m.Endpoints {
		sum += e.Share
	}
	for i := range m.Endpoints {
		m.Endpoints[i].Share /= sum
	}
	return m, nil
}

// requestsPerRun is the typical request count of one envelope run, which
// sets how far sampling moves a run's quantiles.
func requestsPerRun(env *envelope.Envelope) float64 {
	var sum float64
	for _, r := range env.Runs {
		sum += float64(r.Requests)
	}
	if len(env.Runs) > 0 && sum > 0 {
		return sum / float64(len(env.Runs))
	}
	return env.Throughput.Mean * 360 // a 6-minute run
}

func mid(b envelope.Band) (float64, bool) {
	if b.Max <= 0 {
		return 0, false
	}
	if b.Mean > 0 {
		return b.Mean, true
	}
	return (b.Min + b.Max) / 2, true
}

func fitLognormal(avg, median, p95, p99 envelope.Band) (mu, sigma float64, err error) {
	type pt struct{ z, lv float64 }
	var pts []pt
	for _, q := range []struct {
		z float64
		b envelope.Band
	}{{0, median}, {1.6448536, p95}, {2.3263479, p99}} {
		if v, ok := mid(q.b); ok {
			pts = append(pts, pt{q.z, math.Log(v)})
		}
	}
	a, haveAvg := mid(avg)
	switch {
	case len(pts) >= 2:
		var sz, sl, szz, szl float64
		for _, p := range pts {
			sz += p.z
			sl += p.lv
			szz += p.z * p.z
			szl += p.z * p.lv
		}
		n := float64(len(pts))
		sigma = (n*szl - sz*sl) / (n*szz - sz*sz)
		mu = (sl - sigma*sz) / n
	case len(pts) == 1 && haveAvg:
		// ln avg = mu + s²/2 and ln q = mu + z s.
		d := math.Log(a) - pts[0].lv
		if pts[0].z == 0 {
			sigma = math.Sqrt(math.Max(2*d, 0))
		} else {
			z := pts[0].z
			disc := z*z + 2*d
			if disc < 0 {
				disc = 0
			}
			sigma = z - math.Sqrt(disc)
			if sigma <= 0 {
				sigma = z + math.Sqrt(disc)
			}
		}
		mu = pts[0].lv - pts[0].z*sigma
	case len(pts) == 1:
		mu, sigma = pts[0].lv-pts[0].z*0.5, 0.5
	case haveAvg:
		mu, sigma = math.Log(a)-0.125, 0.5
	default:
		return 0, 0, errors.New("no avg, median, p95 or p99 band to fit a latency distribution to")
	}
	if sigma <= 0.01 || math.IsNaN(sigma) {
		sigma = 0.01
	}
	return mu, sigma, nil
}

// mixQuantile is the p quantile of the share-weighted mixture.
func mixQuantile(eps []Endpoint, p float64) float64 {
	cdf := func(x float64) float64 {
		var s, w float64
		for _, e := range eps {
			s += e.Share * 0.5 * math.Erfc(-(math.Log(x)-e.Mu)/(e.Sigma*math.Sqrt2))
			w += e.Share
		}
		return s / w
	}
	// Bisection in log space over [1e-6, 1e7] ms: 64 halvings leave a
	// relative error far below a microsecond's worth.
	lo, hi := 1e-6, 1e7
	for range 64 {
		m := math.Sqrt(lo * hi)
		if cdf(m) < p {
			lo = m
		} else {
			hi = m
		}
	}
	return math.Sqrt(lo * hi)
}

type aggTarget struct {
	name figures.Name
	p    float64
	band envelope.Band
	mid  float64
}

// aggTargets are the overall quantile bands the mix must reproduce.
func aggTargets(l envelope.Latency) []aggTarget {
	var ts []aggTarget
	for _, n := range figures.Percentiles() {
		t := aggTarget{name: n, p: n.Def().Quantile, band: l.Band(n)}
		if v, ok := mid(t.band); ok {
			t.mid = v
			ts = append(ts, t)
		}
	}
	return ts
}

// outside is how far v lies outside b, in log units (0 inside).
func outside(v float64, b envelope.Band) float64 {
	switch {
	case v < b.Min:
		return math.Log(b.Min / v)
	case v > b.Max:
		return math.Log(v / b.Max)
	}
	return 0
}

// fitShares searches the simplex for the mix whose overall median, p95
// and p99 land inside the envelope's bands, as close to their midpoints
// as the endpoint distributions allow.
//
// Matching the quantiles alone is not enough: an aggregate distribution
// is a mixture, and a quantile can sit on the edge of a gap between fast
// and slow endpoints (say 5% of requests on a slow endpoint and almost
// none just below it), where it matches the band exactly yet any real
// run's p95 jumps across the gap. So each quantile's neighbours p±δ,
// δ three sampling standard errors of the proportion in a run of n
// requests, must stay in the band too. The search is coordinate descent
// with multiplicative steps from several starts (uniform, and each
// endpoint dominant), keeping the best.
func fitShares(m *Model, l envelope.Latency, n float64) {
	ts := aggTargets(l)
	k := len(m.Endpoints)
	set := func(s []float64) {
		for i := range m.Endpoints {
			m.Endpoints[i].Share = s[i]
		}
	}
	uniform := make([]float64, k)
	for i := range uniform {
		uniform[i] = 1
	}
	if len(ts) == 0 || k < 2 {
		set(uniform)
		return
	}
	if n < 100 {
		n = 100
	}
	loss := func() float64 {
		var s float64
		for _, t := range ts {
			q := mixQuantile(m.Endpoints, t.p)
			o := outside(q, t.band)
			d := math.Log(q / t.mid)
			s += 100*o*o + d*d
			delta := 3 * math.Sqrt(t.p*(1-t.p)/n)
			for _, p := range []float64{t.p - delta, t.p + delta} {
				if p > 0 && p < 1 {
					o := outside(mixQuantile(m.Endpoints, p), t.band)
					s += 10 * o * o
				}
			}
		}
		return s
	}
	starts := [][]float64{uniform}
	for i := range k {
		s := make([]float64, k)
		for j := range s {
			s[j] = 0.3 / float64(k-1)
		}
		s[i] = 0.7
		starts = append(starts, s)
	}
	var best []float64
	bestLoss := math.Inf(1)
	for _, st := range starts {
		set(st)
		cur := loss()
		for step := 2.0; step > 1.001; step = math.Sqrt(step) {
			for improved := true; improved; {
				improved = false
				for i := range m.Endpoints {
					for _, f := range []float64{step, 1 / step} {
						old := m.Endpoints[i].Share
						m.Endpoints[i].Share = math.Max(old*f, 1e-6)
						if l := loss(); l < cur-1e-12 {
							cur, improved = l, true
						} else {
							m.Endpoints[i].Share = old
						}
					}
				}
			}
		}
		if cur < bestLoss {
			bestLoss = cur
			best = best[:0]
			for _, e := range m.Endpoints {
				best = append(best, e.Share)
			}
		}
	}
	set(best)
}

// Write simulates one run of the model with o into w as NDJSON: the runs
// of a service whose model is fixed, judged against envelopes made from
// other runs of it.
func (m *Model) Write(w io.Writer, o Options) error {
	cp := *m
	cp.Endpoints = slices.Clone(m.Endpoints)
	o, err := o.resolve(&cp)
	if err != nil {
		return err
	}
	start := o.start()
	rng := rand.New(rand.NewPCG(o.Seed, 0x656e76656c6f7065))
	bw := bufio.NewWriterSize(w, 1<<16)
	s := &sink{w: bw, testid: o.TestID}
	writeMetricLines(bw, &cp)
	if err := s.events(&cp, o, start, rng); err != nil {
		return err
	}
	return bw.Flush()
}

// has says whether the model has endpoint key.
func (m *Model) has(key string) bool {
	for _, e := range m.Endpoints {
		if e.Key == key {
			return true
		}
	}
	return false
}

// resolve fills o's defaults, checks its factors against env and applies
// the latency factors to m's endpoints.
func (o Options) resolve(m *Model) (Options, error) {
	if o.Duration <= 0 {
		o.Duration = 6 * time.Minute
	}
	if o.ThroughputFactor == 0 {
		o.ThroughputFactor = 1
	}
	if o.ThroughputFactor < 0 || o.ErrorRate < 0 || o.ErrorRate > 1 {
		return o, fmt.Errorf("simulate: throughput factor %g or error rate %g out of range", o.ThroughputFactor, o.ErrorRate)
	}
	for k, f := range o.LatencyFactor {
		if f <= 0 {
			return o, fmt.Errorf("simulate: latency factor %s=%g must be positive", k, f)
		}
		if k == "*" {
			continue
		}
		if !m.has(k) {
			return o, fmt.Errorf("simulate: latency factor for %q: no such endpoint in the envelope", k)
		}
	}
	var eff Effect
	if !o.Variance.IsZero() {
		keys := make([]string, len(m.Endpoints))
		for i, e := range m.Endpoints {
			keys[i] = e.Key
		}
		eff = o.Variance.Draw(o.Seed, keys)
		o.ThroughputFactor *= eff.Throughput
	}
	for i := range m.Endpoints {
		e := &m.Endpoints[i]
		if f, ok := o.LatencyFactor["*"]; ok {
			e.LatencyScale = f
		}
		if f, ok := o.LatencyFactor[e.Key]; ok {
			e.LatencyScale = f
		}
		if !o.Variance.IsZero() {
			e.LatencyScale *= eff.Latency * eff.Endpoints[e.Key]
		}
	}
	if o.TestID == "" {
		o.TestID = "simulated-" + strconv.FormatUint(o.Seed, 10)
	}
	return o, nil
}

// writeMetricLines writes the Metric lines k6 writes before any point.
func writeMetricLines(bw *bufio.Writer, m *Model) {
	type def struct {
		name     string
		typ      k6.MetricType
		contains k6.ValueType
	}
	var metrics []def
	for _, name := range []string{"http_reqs", k6.HTTPReqDuration, "http_req_failed", "iterations", "vus", "vus_max"} {
		typ, contains, _ := k6.Builtin(name)
		metrics = append(metrics, def{name, typ, contains})
	}
	seen := map[string]bool{}
	for _, e := range m.Endpoints {
		if e.Metric != "" && !seen[e.Metric] {
			seen[e.Metric] = true
			metrics = append(metrics, def{e.Metric, k6.Trend, k6.Time})
		}
	}
	for _, mt := range metrics {
		// bufio.Writer keeps its first error; the Flush at the end returns it.
		_, _ = fmt.Fprintf(bw, `{"type":"Metric","data":{"name":%s,"type":"%s","contains":"%s","thresholds":[],"submetrics":null},"metric":%s}`+"\n",
			jsonString(mt.name), mt.typ, mt.contains, jsonString(mt.name))
	}
}

// events writes the run's points: three event streams merged in time
// order, requests (at the scaled rate, Poisson unless o.Variance says
// otherwise, delayed in its slow stretches), iterations (Poisson) and
// the vus gauge every second.
func (s *sink) events(m *Model, o Options, start time.Time, rng *rand.Rand) error {
	rate := m.Rate * o.ThroughputFactor
	iterRate := m.IterRate * o.ThroughputFactor
	end := o.Duration.Seconds()
	reqEnd, gap := o.Variance.arrivals(rng, rate, end)
	bursts := o.Variance.Burst.draw(o.Seed, end)
	nextReq := gap()
	if nextReq >= reqEnd {
		nextReq = math.Inf(1)
	}
	nextIter := math.Inf(1)
	if iterRate > 0 {
		nextIter = rng.ExpFloat64() / iterRate
	}
	nextVU := 0.0
	cum := make([]float64, len(m.Endpoints))
	var acc float64
	for i, e := range m.Endpoints {
		acc += e.Share
		cum[i] = acc
	}
	for {
		t := math.Min(nextReq, math.Min(nextIter, nextVU))
		if t >= end {
			break
		}
		ts := stamp(start, t)
		switch t {
		case nextVU:
			s.point("vus", ts, float64(m.VUs), nil)
			s.point("vus_max", ts, float64(m.VUs), nil)
			nextVU++
		case nextIter:
			s.point("iterations", ts, 1, nil)
			nextIter += rng.ExpFloat64() / iterRate
		default:
			u := rng.Float64() * acc
			i := sort.SearchFloat64s(cum, u)
			if i >= len(m.Endpoints) {
				i = len(m.Endpoints) - 1
			}
			e := m.Endpoints[i]
			ms := e.latency(rng, bursts, t)
			fail := o.ErrorRate > 0 && rng.Float64() < o.ErrorRate
			tags := e.tags(fail)
			s.point("http_reqs", ts, 1, tags)
			s.point(k6.HTTPReqDuration, ts, round6(ms), tags)
			fv := 0.0
			if fail {
				fv = 1
			}
			s.point("http_req_failed", ts, fv, tags)
			if e.Metric != "" {
				s.point(e.Metric, ts, round6(ms), [][2]string{})
			}
			nextReq += gap()
			if nextReq >= reqEnd {
				nextReq = math.Inf(1)
			}
		}
		if s.err != nil {
			return s.err
		}
	}
	return nil
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// tags are the http_* tags of a request to e.
func (e Endpoint) tags(fail bool) [][2]string {
	name := e.Key
	if e.Tag == "name" {
		name = e.Value
	}
	status, expected := "200", "true"
	if fail {
		status, expected = "503", "false"
	}
	t := [][2]string{{"expected_response", expected}, {"method", "GET"}, {"name", name}, {"status", status}}
	if e.Tag != "" && e.Tag != "name" {
		t = append(t, [2]string{e.Tag, e.Value})
	}
	return t
}

type sink struct {
	w      *bufio.Writer
	testid string
	err    error
	// quoted are the JSON strings already written (see quote).
	quoted map[string]string
}

// point writes one Point line; nil tags means only testid (gauges),
// otherwise testid, scenario and group are added as k6 does.
func (s *sink) point(metric string, ts time.Time, v float64, tags [][2]string) {
	var b strings.Builder
	b.WriteString(`{"metric":`)
	b.WriteString(s.quote(metric))
	b.WriteString(`,"type":"Point","data":{"time":"`)
	b.WriteString(ts.Format(time.RFC3339Nano))
	b.WriteString(`","value":`)
	b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
	b.WriteString(`,"tags":{`)
	all := [][2]string{{"testid", s.testid}}
	if tags != nil {
		all = append(all, [2]string{"group", ""}, [2]string{"scenario", "default"})
		all = append(all, tags...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i][0] < all[j][0] })
	for i, kv := range all {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s.quote(kv[0]))
		b.WriteByte(':')
		b.WriteString(s.quote(kv[1]))
	}
	b.WriteString("}}}\n")
	if _, err := s.w.WriteString(b.String()); err != nil && s.err == nil {
		s.err = err
	}
}

// WriteFile writes the run to path, gzip-compressed when it ends in .gz.
func WriteFile(path string, env *envelope.Envelope, o Options) error {
	m, err := Fit(env)
	if err != nil {
		return err
	}
	return m.WriteFile(path, o)
}

// WriteFile writes a run of the model to path, gzip-compressed when it
// ends in .gz.
func (m *Model) WriteFile(path string, o Options) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var w io.Writer = f
	var gz *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		gz = gzip.NewWriter(f)
		w = gz
	}
	err = m.Write(w, o)
	if gz != nil {
		if cerr := gz.Close(); err == nil {
			err = cerr
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// quote is jsonString, remembered: a run repeats the same few metric
// names and tags in every point. The set is the model's own (its
// endpoints, tags and metrics), so it stays small.
func (s *sink) quote(v string) string {
	q, ok := s.quoted[v]
	if !ok {
		if s.quoted == nil {
			s.quoted = map[string]string{}
		}
		q = jsonString(v)
		s.quoted[v] = q
	}
	return q
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
