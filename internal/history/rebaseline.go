package history

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
)

// Rebaseline is the stretch of a line a new envelope is made from: the
// runs from an accepted change point on, outlier runs left out.
type Rebaseline struct {
	// Change is the change point the stretch starts at.
	Change StoredChange
	// From is the 1-based index of the stretch's first run in the line.
	From int
	// Records are the stretch's runs with their figures.
	Records []Record
	// Outliers are the indices of the runs left out as outlier runs.
	Outliers []int
}

// ErrNoAccepted is returned when no change point was accepted.
var ErrNoAccepted = fmt.Errorf("no change point is acknowledged or expected: accept one with `history ack ID --status expected` (or acknowledged), or name one with --since ID")

// Rebaseline picks the runs a re-baseline rests on: from change id's
// run (any status), or from the run of the latest change point whose
// status accepts the new level (acknowledged or expected).
func (s *Store) Rebaseline(ctx context.Context, an *Analysis, id string) (*Rebaseline, error) {
	stored, err := s.StoredChanges(ctx, an.Test)
	if err != nil {
		return nil, err
	}
	rb := &Rebaseline{}
	for _, c := range stored {
		at := an.IndexOf(c.Commit)
		if at == 0 || c.Commit == "" {
			at = c.RunIndex
		}
		switch {
		case id != "" && c.ID == id:
			rb.Change, rb.From = c, at
		case id == "" && c.Status.Accepted() && at > rb.From:
			rb.Change, rb.From = c, at
		}
	}
	switch {
	case id != "" && rb.From == 0:
		return nil, fmt.Errorf("history %s: no reported change point %s of test %s (give an id as history changes shows it)", s.Where, id, an.Test)
	case rb.From == 0:
		return nil, ErrNoAccepted
	case rb.From > len(an.Runs):
		return nil, fmt.Errorf("history %s: change point %s lies at run %d, beyond the line's %d runs", s.Where, rb.Change.ID, rb.From, len(an.Runs))
	}
	out := map[int]bool{}
	for _, o := range an.Result.Outliers {
		if o.Run.Index >= rb.From {
			out[o.Run.Index] = true
		}
	}
	rb.Outliers = slices.Sorted(maps.Keys(out))
	var runs []Run
	for i := rb.From; i <= len(an.Runs); i++ {
		if !out[i] {
			runs = append(runs, an.Runs[i-1])
		}
	}
	figs, err := s.figureRows(ctx, runs)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		rb.Records = append(rb.Records, Record{Run: r, Figures: figs[r.ID]})
	}
	return rb, nil
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

// FigureChange is one figure of two envelopes side by side.
type FigureChange struct {
	Figure   string
	Old, New float64
}

// Change is New/Old − 1, 0 when Old is 0.
func (c FigureChange) Change() float64 {
	if c.Old == 0 {
		return 0
	}
	return c.New/c.Old - 1
}

// CompareEnvelopes lists the figures two envelopes judge by, side by
// side: throughput and iteration rate (means), the error rate, the
// aggregate and every endpoint's median (mean of the runs) and p95 and
// p99 bands (their max, the edge a run is judged against). An endpoint
// only one envelope has shows 0 on the other side.
func CompareEnvelopes(old, cur *envelope.Envelope) []FigureChange {
	out := []FigureChange{
		{"rps (mean)", old.Throughput.Mean, cur.Throughput.Mean},
		{"iterations_per_s (mean)", old.Iterations.Mean, cur.Iterations.Mean},
		{"error_rate", old.Errors.Rate, cur.Errors.Rate},
		{"median (mean)", old.Latency.Median.Mean, cur.Latency.Median.Mean},
		{"p95 (band max)", old.Latency.P95.Max, cur.Latency.P95.Max},
		{"p99 (band max)", old.Latency.P99.Max, cur.Latency.P99.Max},
	}
	both := maps.Clone(old.Endpoints)
	maps.Copy(both, cur.Endpoints)
	keys := slices.Sorted(maps.Keys(both))
	for _, k := range keys {
		o, n := old.Endpoints[k], cur.Endpoints[k]
		out = append(out,
			FigureChange{k + ".median (mean)", o.Median.Mean, n.Median.Mean},
			FigureChange{k + ".p95 (band max)", o.P95.Max, n.P95.Max},
			FigureChange{k + ".p99 (band max)", o.P99.Max, n.P99.Max})
	}
	return out
}
