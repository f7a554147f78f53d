package history

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// Rebaseline is the stretch of a line a new envelope is made from: the
// runs from an accepted change point on, outlier runs left out.
type Rebaseline struct {
	// Change is the change point the stretch starts at.
	Change runstore.StoredChange
	// From is the 1-based index of the stretch's first run in the line.
	From int
	// Records are the stretch's runs with their figures.
	Records []runstore.Record
	// Outliers are the indices of the runs left out as outlier runs.
	Outliers []int
}

// ErrNoAccepted is returned when no change point was accepted.
var ErrNoAccepted = fmt.Errorf("no change point is acknowledged or expected: accept one with `history ack ID --status expected` (or acknowledged), or name one with --since ID")

// Rebaseline picks the runs of the line a re-baseline rests on, with
// their figures from s: from change id's run (any status), or from the
// run of the latest change point whose status accepts the new level
// (acknowledged or expected).
func (an *Analysis) Rebaseline(ctx context.Context, s *runstore.Store, id string) (*Rebaseline, error) {
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
		case id == "" && Status(c.Status).Accepted() && at > rb.From:
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
	var runs []runstore.Run
	for i := rb.From; i <= len(an.Runs); i++ {
		if !out[i] {
			runs = append(runs, an.Runs[i-1])
		}
	}
	if rb.Records, err = s.Records(ctx, runs); err != nil {
		return nil, err
	}
	return rb, nil
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
