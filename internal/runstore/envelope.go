package runstore

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
)

// Meta is what a user says about a run; set fields override the run's
// own tags.
type Meta struct {
	Test, Commit, Branch, Version, Note string
	CommitTime                          time.Time
}

// tagKeys are the k6 tags a run's metadata is read from.
var tagKeys = []string{"commit", "branch", "version", "testid", "envelope"}

// tagScan is how many of a run's first points runTags reads: k6 puts a
// run's --tag values on every sample, so the first ones carry them all.
const tagScan = 1000

// runTags reads the metadata tags a run's points carry (a summary carries
// none): the first value each tag has among the first tagScan points.
func runTags(r *k6.Run) map[string]string {
	tags := map[string]string{}
	for _, p := range r.Points[:min(len(r.Points), tagScan)] {
		for _, k := range tagKeys {
			if _, ok := tags[k]; !ok && p.Tags[k] != "" {
				tags[k] = p.Tags[k]
			}
		}
		if len(tags) == len(tagKeys) {
			break
		}
	}
	return tags
}

// ErrNoTest is returned for a run that names no test.
var ErrNoTest = errors.New("no test name: the run carries no envelope tag (k6 --tag envelope=NAME); give one with --test")

// FromInput makes the record of one run read as baseline reads runs
// (envelope.ReadFiles with envelope.LoadOptions). Its figures come from
// envelope.Compute over that one run, so a run recorded in history and
// the same run in an envelope agree to the last digit.
func FromInput(in envelope.Input, meta Meta, groupBy string) (Record, error) {
	env, err := envelope.Compute([]envelope.Input{in}, envelope.Options{Name: meta.Test, GroupBy: groupBy})
	if err != nil {
		return Record{}, err
	}
	tags := runTags(in.Run)
	pick := func(flag, tag string) string {
		if flag != "" {
			return flag
		}
		return tags[tag]
	}
	rec := Record{Run: Run{
		Test: pick(meta.Test, "envelope"), TestID: tags["testid"], Commit: pick(meta.Commit, "commit"),
		CommitTime: meta.CommitTime.UTC(), Branch: pick(meta.Branch, "branch"), Version: pick(meta.Version, "version"),
		RunTime: in.Run.Start.UTC(), DurationS: env.Runs[0].DurationSeconds, VUs: env.Provenance.Workload.VUs,
		SourceFile: in.Source.File, Format: in.Source.Format, SHA256: in.Source.SHA256, Note: meta.Note,
	}}
	if rec.RunTime.Equal(time.Unix(0, 0)) {
		rec.RunTime = time.Time{}
	}
	if rec.Test == "" {
		return Record{}, fmt.Errorf("%s: %w", in.Source.File, ErrNoTest)
	}
	rec.Figures = RunFigures(env.Runs[0])
	return rec, nil
}

// RunFigures lists an envelope's per-run values as figures: the
// aggregate ones, then each endpoint's by name. A latency statistic the
// run's file lacks (0 in the envelope) is left out, as are the iteration
// figures of a run without iterations.
func RunFigures(f envelope.RunFigures) []Figure {
	var figs []Figure
	add := func(ep, name string, v float64, n int64, ci *envelope.Interval) {
		figs = append(figs, Figure{Endpoint: ep, Name: name, Value: v, Count: n, CI: ci})
	}
	add("", FigRPS, f.RPS, f.Requests, nil)
	if f.Iterations > 0 {
		add("", FigIterationsPerS, f.IterationsPerS, f.Iterations, nil)
		add("", FigRequestsPerIter, f.RequestsPerIter, f.Iterations, nil)
	}
	add("", FigErrorRate, f.ErrorRate(), f.Requests, nil)
	latency := func(ep string, n int64, avg, med, p95, p99, mx float64, ci95, ci99 *envelope.Interval) {
		for _, s := range []struct {
			name string
			v    float64
			ci   *envelope.Interval
		}{{FigAvg, avg, nil}, {FigMedian, med, nil}, {FigP95, p95, ci95}, {FigP99, p99, ci99}, {FigMax, mx, nil}} {
			if s.v != 0 {
				add(ep, s.name, s.v, n, s.ci)
			}
		}
	}
	latency("", f.Requests, f.Avg, f.Median, f.P95, f.P99, f.Max, f.P95CI, f.P99CI)
	names := make([]string, 0, len(f.Endpoints))
	for name := range f.Endpoints {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		e := f.Endpoints[name]
		latency(name, e.Count, e.Avg, e.Median, e.P95, e.P99, e.Max, e.P95CI, e.P99CI)
	}
	return figs
}

// RunFiguresOf turns a record back into the envelope's per-run values,
// the inverse of RunFigures.
func RunFiguresOf(rec Record) envelope.RunFigures {
	f := envelope.RunFigures{Source: rec.Label(), DurationSeconds: rec.DurationS}
	for _, x := range rec.Figures {
		if x.Endpoint != "" {
			if f.Endpoints == nil {
				f.Endpoints = map[string]envelope.RunEndpoint{}
			}
			e := f.Endpoints[x.Endpoint]
			e.Count = x.Count
			setLatency(&e.Avg, &e.Median, &e.P95, &e.P99, &e.Max, &e.P95CI, &e.P99CI, x)
			f.Endpoints[x.Endpoint] = e
			continue
		}
		switch x.Name {
		case FigRPS:
			f.RPS, f.Requests = x.Value, x.Count
		case FigIterationsPerS:
			f.IterationsPerS, f.Iterations = x.Value, x.Count
		case FigRequestsPerIter:
			f.RequestsPerIter = x.Value
		case FigErrorRate:
			f.Failed = int64(math.Round(x.Value * float64(x.Count)))
		default:
			setLatency(&f.Avg, &f.Median, &f.P95, &f.P99, &f.Max, &f.P95CI, &f.P99CI, x)
		}
	}
	return f
}

func setLatency(avg, med, p95, p99, mx *float64, ci95, ci99 **envelope.Interval, x Figure) {
	switch x.Name {
	case FigAvg:
		*avg = x.Value
	case FigMedian:
		*med = x.Value
	case FigP95:
		*p95, *ci95 = x.Value, x.CI
	case FigP99:
		*p99, *ci99 = x.Value, x.CI
	case FigMax:
		*mx = x.Value
	}
}

// LineEnvelope is the envelope of a stretch of recorded runs, as
// baseline would have derived it from their per-run values: each run's
// figures, the p95/p99 bands of every endpoint, the summed errors and the
// common workload. compare judges candidates against it.
func LineEnvelope(name string, recs []Record) *envelope.Envelope {
	env := &envelope.Envelope{APIVersion: envelope.APIVersion, Kind: envelope.Kind, Name: name,
		Tolerance: envelope.DefaultTolerance(), Endpoints: map[string]envelope.Endpoint{}}
	var dur float64
	vus := -1
	for _, r := range recs {
		f := RunFiguresOf(r)
		env.Runs = append(env.Runs, f)
		env.Errors.Failed += f.Failed
		env.Errors.Total += f.Requests
		dur += r.DurationS
		if vus == -1 || vus == r.VUs {
			vus = r.VUs
		} else {
			vus = 0
		}
		for name, e := range f.Endpoints {
			ep := endpointSource(name)
			prev := env.Endpoints[name]
			ep.Median, ep.P95, ep.P99 = prev.Median, prev.P95, prev.P99
			widen(&ep.Median, e.Median)
			widen(&ep.P95, e.P95)
			widen(&ep.P99, e.P99)
			env.Endpoints[name] = ep
		}
	}
	if env.Errors.Total > 0 {
		env.Errors.Rate = float64(env.Errors.Failed) / float64(env.Errors.Total)
	}
	if vus > 0 {
		env.Provenance.Workload.VUs = vus
	}
	if len(recs) > 0 && dur > 0 {
		env.Provenance.Workload.Duration = (time.Duration(dur / float64(len(recs)) * float64(time.Second))).Round(time.Second).String()
	}
	return env
}

// widen adds a run's value to a band.
func widen(b *envelope.Band, v float64) {
	if v <= 0 {
		return
	}
	if b.N == 0 || v < b.Min {
		b.Min = v
	}
	if b.N == 0 || v > b.Max {
		b.Max = v
	}
	b.N++
}

// endpointSource is where an endpoint's series come from, read back from
// its key: "tag=value" for a tagged endpoint, else a custom trend.
func endpointSource(key string) envelope.Endpoint {
	if tag, value, ok := strings.Cut(key, "="); ok {
		return envelope.Endpoint{Tag: tag, Value: value}
	}
	return envelope.Endpoint{Metric: key}
}

// CandidateRun is a recorded run as compare reads a candidate: a summary
// of its figures (no points, so no sampling error of its own).
func CandidateRun(rec Record) *k6.Run {
	f := RunFiguresOf(rec)
	r := &k6.Run{Source: rec.Label(), Format: k6.FormatSummaryExport, Mode: k6.ModeSummary,
		Duration: time.Duration(rec.DurationS * float64(time.Second)), Metrics: map[string]*k6.Metric{}}
	put := func(name, parent string, tags map[string]string, typ k6.MetricType, vals map[string]float64) {
		contains := k6.Default
		if typ == k6.Trend {
			contains = k6.Time
		}
		r.Metrics[name] = &k6.Metric{Name: name, Parent: parent, Tags: tags, Type: typ, Contains: contains, Values: vals, Mode: k6.ModeSummary}
	}
	put("http_reqs", "http_reqs", nil, k6.Counter, map[string]float64{"count": float64(f.Requests), "rate": f.RPS})
	put("http_req_failed", "http_req_failed", nil, k6.Rate, map[string]float64{"passes": float64(f.Failed), "fails": float64(f.Requests - f.Failed)})
	if rec.VUs > 0 {
		put("vus_max", "vus_max", nil, k6.Gauge, map[string]float64{"max": float64(rec.VUs)})
	}
	trend := func(avg, med, p95, p99, mx float64, n int64) map[string]float64 {
		v := map[string]float64{}
		for k, x := range map[string]float64{"avg": avg, "med": med, "p(95)": p95, "p(99)": p99, "max": mx} {
			if x > 0 {
				v[k] = x
			}
		}
		if n > 0 {
			v["count"] = float64(n)
		}
		return v
	}
	put("http_req_duration", "http_req_duration", nil, k6.Trend, trend(f.Avg, f.Median, f.P95, f.P99, f.Max, f.Requests))
	for name, e := range f.Endpoints {
		vals := trend(e.Avg, e.Median, e.P95, e.P99, e.Max, e.Count)
		if ep := endpointSource(name); ep.Tag != "" {
			put("http_req_duration{"+ep.Tag+":"+ep.Value+"}", "http_req_duration", map[string]string{ep.Tag: ep.Value}, k6.Trend, vals)
		} else {
			put(name, name, nil, k6.Trend, vals)
		}
	}
	return r
}

// RecordsEnvelope derives an envelope from recorded runs by the baseline
// method (envelope.Compute over each run's stored figures, read back as
// a summary of that run), with each run's order-statistic intervals as
// they were recorded. With a current envelope, the new one keeps its
// name, match, tolerance, workload, warm-up, grouping, endpoint labels
// and topology, so that it judges the same tests the same way.
func RecordsEnvelope(recs []Record, cur *envelope.Envelope, name string) (*envelope.Envelope, error) {
	in := make([]envelope.Input, len(recs))
	for i, r := range recs {
		run := CandidateRun(r)
		f := RunFiguresOf(r)
		if f.Iterations > 0 {
			run.Metrics["iterations"] = &k6.Metric{Name: "iterations", Parent: "iterations", Type: k6.Counter, Contains: k6.Default,
				Values: map[string]float64{"count": float64(f.Iterations), "rate": f.IterationsPerS}, Mode: k6.ModeSummary}
		}
		in[i] = envelope.Input{Run: run, Source: envelope.Source{File: r.SourceFile, SHA256: r.SHA256, Format: r.Format, Start: r.RunTime, TestID: r.TestID}}
	}
	o := envelope.Options{Name: name}
	if cur != nil {
		o.Name, o.Match, o.GroupBy = cmpOr(name, cur.Name), cur.Match, cur.Provenance.GroupBy
		tol, w := cur.Tolerance, cur.Provenance.Workload
		o.Tolerance, o.Workload = &tol, &w
	}
	env, err := envelope.Compute(in, o)
	if err != nil {
		return nil, err
	}
	for i, r := range recs {
		f := RunFiguresOf(r)
		run := &env.Runs[i]
		run.Source = r.SourceFile
		run.P95CI, run.P99CI = f.P95CI, f.P99CI
		for ep, e := range run.Endpoints {
			if fe, ok := f.Endpoints[ep]; ok {
				e.P95CI, e.P99CI = fe.P95CI, fe.P99CI
				run.Endpoints[ep] = e
			}
		}
	}
	if cur != nil {
		// The recorded figures already had the warm-up dropped.
		env.Provenance.SkipWarmup = cur.Provenance.SkipWarmup
		env.Topology = cur.Topology
		for k, e := range cur.Endpoints {
			if ne, ok := env.Endpoints[k]; ok {
				ne.Label = e.Label
				env.Endpoints[k] = ne
			}
		}
	}
	return env, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
