package figures

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// stats are the trend statistics a run's figures read: k6's default
// summaryTrendStats, and p(99) and count, which they lack.
func trendStats() []string { return append(k6.DefaultStats(), "p(99)", "count") }

// LoadOptions are how a run's figures are read from its file: in one
// pass, with the statistics the figures need, each percentile's
// interval, and http_req_duration by time for the saturation check; no
// point is kept. groupBy's values become endpoints; skipWarmup drops the
// start of a point stream.
func LoadOptions(skipWarmup time.Duration, groupBy string) k6.LoadOptions {
	return k6.LoadOptions{SkipWarmup: skipWarmup, GroupBy: groupBy, Stats: trendStats(),
		IntervalConfidence: IntervalConfidence, Timeline: true}
}

// ReadOptions say how a loaded run was read: the tag whose values are
// endpoints, and the warm-up the loader cut.
type ReadOptions struct {
	GroupBy    string
	SkipWarmup time.Duration
}

// OptionsOf are the ReadOptions of a run loaded with opts.
func OptionsOf(opts k6.LoadOptions) ReadOptions {
	return ReadOptions{GroupBy: opts.GroupBy, SkipWarmup: opts.SkipWarmup}
}

// Read takes a loaded k6 run's figures, read by k6's own statistic names
// (the loader gives every format those), rounded as Round says.
func Read(r *k6.Run, src Source, o ReadOptions) (Run, error) {
	name := src.File
	if name == "" {
		name = r.Source
	}
	f := Run{Source: name, DurationSeconds: Round(r.Duration.Seconds())}
	reqs := r.Metrics["http_reqs"]
	if reqs == nil {
		return f, fmt.Errorf("%s: no http_reqs metric: a run's throughput is its http_reqs rate, so a run must have made HTTP requests (and the metric must not be filtered out of the file)", name)
	}
	count, ok := reqs.Values["count"]
	if !ok {
		return f, fmt.Errorf("%s: metric http_reqs: field count is missing", name)
	}
	rate, ok := reqs.Values["rate"]
	if !ok || rate <= 0 {
		if r.Duration <= 0 {
			return f, fmt.Errorf("%s: metric http_reqs: field rate is missing and the run's duration is unknown", name)
		}
		rate = count / r.Duration.Seconds()
	}
	f.Requests = int64(math.Round(count))
	f.RPS = Round(rate)
	if it := r.Metrics["iterations"]; it != nil {
		c := it.Values["count"]
		ir, ok := it.Values["rate"]
		if !ok && r.Duration > 0 {
			ir = c / r.Duration.Seconds()
		}
		f.Iterations = int64(math.Round(c))
		f.IterationsPerS = Round(ir)
		if c > 0 {
			f.RequestsPerIter = Round(count / c)
		}
	}
	if fm := r.Metrics["http_req_failed"]; fm != nil {
		f.Failed = int64(math.Round(fm.Values["passes"]))
		f.Checked = f.Failed + int64(math.Round(fm.Values["fails"]))
	}
	if d := r.Metrics["dropped_iterations"]; d != nil {
		f.DroppedIterations = int64(math.Round(d.Values["count"]))
	}
	if d := r.Metrics[k6.HTTPReqDuration]; d != nil {
		f.SetAggregate(latencyOf(d))
	}
	f.Endpoints = endpoints(r, o.GroupBy)
	f.Workload = workloadOf(r)
	if r.Mode != k6.ModeSummary {
		f.Workload.Skipped = o.SkipWarmup
	}
	f.Provenance = src
	if f.Provenance.Format == "" {
		f.Provenance.Format = string(r.Format)
	}
	if f.Provenance.K6Version == "" {
		f.Provenance.K6Version = r.K6Version
	}
	if f.Provenance.Start.IsZero() {
		f.Provenance.Start = r.Start.UTC()
	}
	if f.Provenance.End.IsZero() {
		f.Provenance.End = r.End.UTC()
	}
	f.Tags = r.TagValues
	if f.Provenance.TestID == "" {
		f.Provenance.TestID = f.Tag("testid")
	}
	f.Halves = halves(r.Timeline)
	f.Timeline = timelineOf(r.Timeline)
	f.Checks = checksOf(r.Checks)
	return f, nil
}

// Tag is the run's value of a tag (its first, were there several); ""
// when its samples do not carry it.
func (r *Run) Tag(name string) string {
	if vs := r.Tags[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// stat reads a trend statistic by k6's name; a NaN or infinite value
// reads as absent.
func stat(m *k6.Metric, name string) (float64, bool) {
	v, ok := m.Values[name]
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// latencyOf reads a trend's latency figures and their intervals.
func latencyOf(m *k6.Metric) Latency {
	var l Latency
	for _, n := range LatencyNames() {
		d := n.Def()
		v, ok := stat(m, d.Stat)
		if !ok {
			continue
		}
		var ci *Interval
		if iv, ok := m.Intervals[d.Stat]; ok {
			ci = NewInterval(iv.Low, iv.High)
		}
		l.set(n, Round(v), ci)
	}
	if c, ok := m.Values["count"]; ok && c >= 0 {
		l.Count = int64(math.Round(c))
	}
	return l
}

// isBuiltin tells k6's own metrics from a script's: every custom time
// trend of a script is an endpoint.
func isBuiltin(name string) bool {
	_, _, ok := k6.Builtin(name)
	return ok
}

// endpoints are a run's endpoints: every custom time trend by its name,
// every http_req_duration sub-metric of one tag (other than
// expected_response) as "tag=value", and every groupBy value with
// http_req_duration samples as "tag=value", unless a sub-metric gives
// the same key or the value's samples are exactly a custom trend's (a
// script with one Trend per endpoint, fed the request's duration and
// tagged by name, would otherwise list every endpoint twice, and compare
// would judge each figure twice and spend its error budget on the
// copies).
func endpoints(r *k6.Run, groupBy string) map[string]Latency {
	out := map[string]Latency{}
	var trends []*k6.Metric
	for name, m := range r.Metrics {
		switch {
		case m.Type == k6.Trend && m.Parent == name && !isBuiltin(name) && m.Contains != k6.Data:
			out[name] = latencyOf(m)
			trends = append(trends, m)
		case m.Parent == k6.HTTPReqDuration && len(m.Tags) == 1:
			for t, v := range m.Tags {
				if t != "expected_response" {
					out[EndpointKey(t, v)] = latencyOf(m)
				}
			}
		}
	}
	if groupBy != "" && r.GroupBy == groupBy {
		for v, ms := range r.Groups {
			m := ms[k6.HTTPReqDuration]
			key := EndpointKey(groupBy, v)
			if _, taken := out[key]; m == nil || taken || duplicates(m, trends) {
				continue
			}
			out[key] = latencyOf(m)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// duplicates says whether m's samples are exactly one of the trends':
// the same fingerprint and count. Summaries carry no fingerprint and
// never duplicate.
func duplicates(m *k6.Metric, trends []*k6.Metric) bool {
	if m.Fingerprint == 0 {
		return false
	}
	for _, t := range trends {
		if t.Fingerprint == m.Fingerprint && t.Values["count"] == m.Values["count"] {
			return true
		}
	}
	return false
}

// workloadOf is what a run's file tells of its workload.
func workloadOf(r *k6.Run) Workload {
	w := Workload{VUs: VUsOf(r), Summary: r.Mode == k6.ModeSummary}
	sc := map[string]bool{}
	var metrics []string
	for name, m := range r.Metrics {
		if m.Parent == name {
			metrics = append(metrics, name)
		}
		if s, ok := m.Tags["scenario"]; ok {
			sc[s] = true
		}
	}
	if r.GroupBy == "scenario" {
		for v := range r.Groups {
			sc[v] = true
		}
	}
	for _, s := range r.TagValues["scenario"] {
		if s != "" {
			sc[s] = true
		}
	}
	slices.Sort(metrics)
	w.Metrics = metrics
	w.Scenarios = sortedStrings(sc)
	return w
}

// minHalf is the shortest span whose halves are compared, and minHalfN
// the fewest requests a half needs.
const (
	minHalf  = 20 * time.Second
	minHalfN = 20
)

// halves compares the second half of a run's http_req_duration samples
// with the first: each time bin goes to the half its middle falls in.
// Each half's p95 has its own error, taken from the half's samples as a
// run's own error is; each half's request rate is read from the bins of
// the run's steady part (steadyBins), and their spread gives how much
// more than a Poisson count the requests vary.
func halves(t *k6.Timeline) *Halves {
	if t == nil || t.Last.Sub(t.First) < minHalf {
		return nil
	}
	mid := t.First.Add(t.Last.Sub(t.First) / 2)
	var bins [2][]*stats.Sketch
	var sk [2]stats.Sketch
	half := func(start time.Time) int {
		if start.Add(t.Width / 2).Before(mid) {
			return 0
		}
		return 1
	}
	for _, b := range t.Bins {
		i := half(b.Start)
		sk[i].Merge(b.Samples)
		bins[i] = append(bins[i], b.Samples)
	}
	h := &Halves{}
	for i := range sk {
		h.Requests[i] = int64(sk[i].Count())
		h.P95[i] = sk[i].Quantile(0.95)
		lo, hi, ok := sk[i].QuantileCI(0.95, IntervalConfidence)
		if lo, hi, ok := stats.RunQuantileCI(lo, hi, ok, bins[i], 0.95, h.P95[i], IntervalConfidence); ok {
			h.P95LogSE[i] = stats.LogSEOfInterval(lo, hi, IntervalConfidence)
		}
	}
	if h.Requests[0] < minHalfN || h.Requests[1] < minHalfN || h.P95[0] == 0 {
		return nil
	}
	var counts [2][]float64
	for _, b := range steadyBins(t) {
		i := half(b.start)
		counts[i] = append(counts[i], b.n)
	}
	if len(counts[0]) >= 2 && len(counts[1]) >= 2 {
		for i, c := range counts {
			sum := 0.0
			for _, x := range c {
				sum += x
			}
			h.Counted[i] = int64(sum)
			h.Rate[i] = sum / (float64(len(c)) * t.Width.Seconds())
		}
		h.Dispersion = dispersion(counts)
	}
	return h
}

// binCount is one time bin's start and request count.
type binCount struct {
	start time.Time
	n     float64
}

// steadyBins are the time bins of the run's steady part, empty ones
// included: without the first and the last bin, which lie partly
// outside the run, and without the bins at either end holding fewer
// than half the median bin's requests (k6 lets the last iterations
// finish after the run's time is up, and a bin then holds the few
// requests they still make).
func steadyBins(t *k6.Timeline) []binCount {
	if len(t.Bins) < 3 {
		return nil
	}
	first := t.Bins[0].Start
	slots := int(t.Bins[len(t.Bins)-1].Start.Sub(first)/t.Width) + 1
	out := make([]binCount, slots)
	for j := range out {
		out[j].start = first.Add(time.Duration(j) * t.Width)
	}
	for _, b := range t.Bins {
		out[int(b.Start.Sub(first)/t.Width)].n = float64(b.Samples.Count())
	}
	out = out[1 : len(out)-1]
	ns := make([]float64, len(out))
	for j, b := range out {
		ns[j] = b.n
	}
	slices.Sort(ns)
	low := stats.Quantile(ns, 0.5) / 2
	for len(out) > 0 && out[len(out)-1].n < low {
		out = out[:len(out)-1]
	}
	for len(out) > 0 && out[0].n < low {
		out = out[1:]
	}
	return out
}

// dispersion is the variance-to-mean ratio of counts within their
// groups (each group's own mean taken out), at least 1; 1 with too few
// counts to tell.
func dispersion(groups [2][]float64) float64 {
	var ss, sum, df float64
	n := 0
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		m := stats.Mean(g)
		for _, c := range g {
			ss += (c - m) * (c - m)
		}
		sum += m * float64(len(g))
		n += len(g)
		df += float64(len(g) - 1)
	}
	if df < 3 || !(sum > 0) {
		return 1
	}
	return max(1, ss/df/(sum/float64(n)))
}

// HalvesOf are the halves of samples with their times (Unix
// nanoseconds), as the loader's Timeline gives them for a point file;
// nil when the samples span too little time or too few fall in a half.
func HalvesOf(times []int64, vals []float64) *Halves {
	return halves(k6.TimelineOf(times, vals))
}

// ReadRun loads one k6 result through the k6 loader while hashing the
// bytes it reads, so the provenance names exactly the file that was
// used, and takes its figures. name is how the source is recorded:
// keep it relative (see SourceName).
func ReadRun(name string, r io.Reader, opts k6.LoadOptions) (Run, error) {
	h := sha256.New()
	run, err := k6.LoadReader(name, io.TeeReader(r, h), opts)
	if err != nil {
		return Run{}, err
	}
	// The loader may stop before EOF (a summary is one JSON value); hash the rest.
	if _, err := io.Copy(h, r); err != nil {
		return Run{}, fmt.Errorf("%s: %w", name, err)
	}
	return Read(run, Source{File: name, SHA256: hex.EncodeToString(h.Sum(nil)), Format: string(run.Format)}, OptionsOf(opts))
}

// ReadFiles loads run files from disk ("-" is stdin); sources are named
// by SourceName.
func ReadFiles(paths []string, opts k6.LoadOptions) ([]Run, error) {
	var out []Run
	for _, p := range paths {
		if p == "-" {
			r, err := ReadRun("-", os.Stdin, opts)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		r, err := ReadRun(SourceName(p), f, opts)
		_ = f.Close() // only read
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// ReadFS loads run files from a file system (the embedded demo runs);
// prefix is prepended to each name in the provenance.
func ReadFS(fsys fs.FS, names []string, prefix string, opts k6.LoadOptions) ([]Run, error) {
	var out []Run
	for _, n := range names {
		f, err := fsys.Open(n)
		if err != nil {
			return nil, err
		}
		r, err := ReadRun(filepath.ToSlash(filepath.Join(prefix, n)), f, opts)
		_ = f.Close() // only read
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// SourceName is how a file is named in the provenance: relative paths as
// given (slash-separated), absolute ones relative to the working folder
// when inside it, else the base name, so no machine path is recorded.
func SourceName(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.Base(p)
}
