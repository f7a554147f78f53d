package history

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
)

// figureRows reads every figure of the given runs, by run id.
func (s *Store) figureRows(ctx context.Context, runs []Run) (map[int64][]Figure, error) {
	out := map[int64][]Figure{}
	if len(runs) == 0 {
		return out, nil
	}
	ids := make([]any, len(runs))
	marks := make([]string, len(runs))
	for i, r := range runs {
		ids[i], marks[i] = r.ID, "?"
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT run_id, endpoint, figure, value, count, ci_low, ci_high FROM figures WHERE run_id IN ("+strings.Join(marks, ", ")+")"), ids...)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close() //nolint:errcheck // rows.Err says
	for rows.Next() {
		var id int64
		var f Figure
		var n sql.NullInt64
		var lo, hi sql.NullFloat64
		if err := rows.Scan(&id, &f.Endpoint, &f.Name, &f.Value, &n, &lo, &hi); err != nil {
			return nil, err
		}
		f.Count = n.Int64
		if lo.Valid && hi.Valid {
			f.CI = &envelope.Interval{Low: lo.Float64, High: hi.Float64}
		}
		out[id] = append(out[id], f)
	}
	return out, rows.Err()
}

// Latest reads a line's latest n runs (all when n ≤ 0) with their
// figures, in commit-time order; excluded runs are left out.
func (s *Store) Latest(ctx context.Context, l Line, n int) ([]Record, error) {
	l.WithExcluded = false
	runs, err := s.Runs(ctx, l)
	if err != nil {
		return nil, err
	}
	if n > 0 && len(runs) > n {
		runs = runs[len(runs)-n:]
	}
	figs, err := s.figureRows(ctx, runs)
	if err != nil {
		return nil, err
	}
	out := make([]Record, len(runs))
	for i, r := range runs {
		out[i] = Record{Run: r, Figures: figs[r.ID]}
	}
	return out, nil
}

// Label names a recorded run for people: its source and commit.
func (r Run) Label() string {
	if r.Commit == "" {
		return fmt.Sprintf("run %d (%s)", r.ID, r.SourceFile)
	}
	return fmt.Sprintf("run %d (%s, commit %s)", r.ID, r.SourceFile, r.Commit)
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
