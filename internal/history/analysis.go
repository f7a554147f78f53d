// Package history is what a test's recorded runs say across commits:
// the change points, outlier runs and drift of every series of a line
// (internal/changepoint over what internal/runstore reads), matched with
// the change points reported before and their status, the stretch a
// re-baseline rests on, and the history commands' outputs (text, JSON,
// CSV, Markdown and JUnit). It reads the store and writes to it only the
// analysis's own checkpoint (AnalyzeAppended); the change points a
// report finds new it returns, for its caller to store as reported.
package history

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/runstore"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Analysis is the change-point analysis of one line of a test: its runs
// (excluded ones left out) in commit-time order, every series of them
// appended to one analyzer, and the result.
type Analysis struct {
	Test string
	// Runs are the analysed line's runs; run i has index i+1.
	Runs     []runstore.Run
	Analyzer *changepoint.Analyzer
	Result   changepoint.Result
	// DriftFrom is the run drift is measured from when Report is given
	// no later one (0: each series' last segment): the envelope's latest
	// run (EnvelopeRun).
	DriftFrom int
}

// EnvelopeRun is the index of the line's latest run an envelope was made
// from (its sources' content hashes, else test ids), 0 when none is.
func (an *Analysis) EnvelopeRun(env *envelope.Envelope) int {
	_, last := an.EnvelopeRuns(env)
	return last
}

// EnvelopeRuns are the indexes of the line's first and latest runs an
// envelope was made from (its sources' content hashes, else test ids),
// 0 when none is.
func (an *Analysis) EnvelopeRuns(env *envelope.Envelope) (first, last int) {
	hashes, ids := map[string]bool{}, map[string]bool{}
	for _, src := range env.Provenance.Sources {
		hashes[src.SHA256] = src.SHA256 != ""
		ids[src.TestID] = src.TestID != ""
	}
	for i, r := range an.Runs {
		if hashes[r.SHA256] || ids[r.TestID] {
			if first == 0 {
				first = i + 1
			}
			last = i + 1
		}
	}
	return first, last
}

// Analyze reads every series of a line (excluded runs and, for the main
// line, other branches left out) and analyses them together: the family
// whose false discovery rate the analysis controls is the test's series.
// Runs of one commit that follow each other are one point (pool).
func Analyze(ctx context.Context, s *runstore.Store, l runstore.Line, cfg changepoint.Config) (*Analysis, error) {
	return analyzeWithout(ctx, s, l, cfg, nil)
}

// analyzeWithout is Analyze of the line without the runs of the ids
// left (the line as it was before they were recorded).
func analyzeWithout(ctx context.Context, s *runstore.Store, l runstore.Line, cfg changepoint.Config, left []int64) (*Analysis, error) {
	l.WithExcluded = false
	a, err := changepoint.New(cfg)
	if err != nil {
		return nil, err
	}
	runs, err := s.Runs(ctx, l)
	if err != nil {
		return nil, err
	}
	if len(left) > 0 {
		runs = slices.DeleteFunc(runs, func(r runstore.Run) bool { return slices.Contains(left, r.ID) })
	}
	series, err := lineFigures(ctx, s, l, runs, nil)
	if err != nil {
		return nil, err
	}
	keys, err := s.SeriesKeys(ctx, l.Test)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		key := changepoint.Key{Test: l.Test, Figure: k.Figure, Endpoint: k.Endpoint}
		for _, r := range pool(series[k], runs) {
			if err := a.Append(key, k.Figure.Def().Polarity, r); err != nil {
				return nil, fmt.Errorf("history %s: %w", s.Where, err)
			}
		}
	}
	return &Analysis{Test: l.Test, Runs: runs, Analyzer: a, Result: a.Result()}, nil
}

// pool makes the runs of one commit that follow each other in the line
// one point (changepoint.Run.Repeats): their geometric mean (arithmetic
// with a value of 0), the least request count of them, the interval of
// the mean from their own intervals where each has one, placed at the
// first of them. rs are one series' runs in line order; line the line's
// runs. Runs without a commit are never pooled.
func pool(rs []changepoint.Run, line []runstore.Run) []changepoint.Run {
	commit := func(r changepoint.Run) string { return line[r.Index-1].Commit }
	out := make([]changepoint.Run, 0, len(rs))
	for i := 0; i < len(rs); {
		j := i + 1
		for j < len(rs) && commit(rs[i]) != "" && commit(rs[j]) == commit(rs[i]) && rs[j].Index == rs[j-1].Index+1 {
			j++
		}
		if j == i+1 {
			out = append(out, rs[i])
			i++
			continue
		}
		out = append(out, pooled(rs[i:j]))
		i = j
	}
	return out
}

// pooled is the point of runs of one commit.
func pooled(rs []changepoint.Run) changepoint.Run {
	n := float64(len(rs))
	p := changepoint.Run{Index: rs[0].Index, TestID: rs[0].TestID, Commit: rs[0].Commit, Count: rs[0].Count, Repeats: len(rs)}
	positive, intervals := true, true
	var sum, logs, own float64
	z := stats.NormalQuantile(1 - (1-figures.IntervalConfidence)/2)
	for _, r := range rs {
		p.Count = min(p.Count, r.Count)
		sum += r.Value
		positive = positive && r.Value > 0
		if positive {
			logs += math.Log(r.Value)
		}
		intervals = intervals && r.Lo > 0 && r.Hi >= r.Lo
		if intervals {
			d := (math.Log(r.Hi) - math.Log(r.Lo)) / (2 * z)
			own += d * d
		}
	}
	if !positive {
		p.Value = sum / n
		return p
	}
	m := logs / n
	p.Value = math.Exp(m)
	if intervals {
		sd := math.Sqrt(own) / n
		p.Lo, p.Hi = math.Exp(m-z*sd), math.Exp(m+z*sd)
	}
	return p
}

// lineFigures reads the figures of a line's runs (as Runs lists them;
// given ids, only those runs') in one query, by series, each series in
// the line's order.
func lineFigures(ctx context.Context, s *runstore.Store, l runstore.Line, runs []runstore.Run, only []int64) (map[figures.Key][]changepoint.Run, error) {
	index := make(map[int64]int, len(runs))
	for i, r := range runs {
		index[r.ID] = i + 1
	}
	out := map[figures.Key][]changepoint.Run{}
	err := s.LineFigures(ctx, l, only, func(f runstore.LineFigure) {
		at := index[f.RunID]
		if at == 0 {
			return // recorded after the line was read
		}
		run := runs[at-1]
		out[f.Series] = append(out[f.Series], changepoint.Run{Index: at, TestID: run.TestID, Commit: run.Commit,
			Value: f.Value, Count: f.Count, Lo: f.Low, Hi: f.High})
	})
	if err != nil {
		return nil, err
	}
	for _, rs := range out {
		slices.SortFunc(rs, func(a, b changepoint.Run) int { return cmp.Compare(a.Index, b.Index) })
	}
	return out, nil
}

// Ref places a run of the line as the results do.
func (an *Analysis) Ref(index int) changepoint.RunRef {
	r := an.Runs[index-1]
	return changepoint.RunRef{Index: index, TestID: r.TestID, Commit: r.Commit}
}

// IndexOf is the index of the line's first run at a commit (or with
// that testid), 0 when none.
func (an *Analysis) IndexOf(commit string) int { return indexOf(an.Runs, commit) }

// indexOf is the 1-based index in runs of the first run at a commit,
// else the first with that testid; 0 when none.
func indexOf(runs []runstore.Run, commit string) int {
	for i, r := range runs {
		if r.Commit == commit {
			return i + 1
		}
	}
	for i, r := range runs {
		if r.TestID == commit {
			return i + 1
		}
	}
	return 0
}

// Report joins the analysis with the stored lifecycle (stored: the
// test's reported change points, as the store lists them): the change
// points and outliers from run since on (1 for all), each change with
// its status and state, the reported changes no longer found with why
// (Gone), and each series' drift against tol (none when nil). A change
// not stored before is new; a stored one in the same series and
// direction within the minimum segment of it (its run moves while the
// runs after it are few) is that change, under its stored id. The new
// changes are the report's Unreported: the caller stores them as
// reported, so that no later report calls them new again.
func (an *Analysis) Report(stored []runstore.StoredChange, since int, tol *figures.Tolerance) *ChangesReport {
	rep := &ChangesReport{Test: an.Test, Runs: len(an.Runs), Changes: []ReportedChange{}, Outliers: []changepoint.Outlier{}, Drift: []changepoint.Drift{},
		Suspected: []changepoint.Suspect{}, NotAnalysed: append([]changepoint.NotAnalysed{}, an.Result.NotAnalysed...), Gone: []GoneChange{}}
	if since > 1 {
		ref := an.Ref(since)
		rep.Since = &ref
	}
	// matched maps a stored change's id to the found change that is it.
	matched := map[string]string{}
	for _, c := range an.Result.Changes {
		m := an.match(stored, c)
		if m != nil {
			matched[m.ID] = c.ID
		}
		if c.Run.Index < since {
			continue
		}
		rc := ReportedChange{Change: c, Status: StatusNew, State: state(false, StatusNew), New: true}
		if m != nil {
			rc.ID, rc.Status, rc.Note, rc.New = m.ID, Status(m.Status), m.Note, false
			rc.FirstReported = m.FirstReported.Format(time.RFC3339)
			rc.State = state(true, rc.Status)
		} else {
			rep.unreported = append(rep.unreported, runstore.StoredChange{ID: c.ID, Test: an.Test, Figure: c.Figure, Endpoint: c.Endpoint,
				Commit: c.Run.Commit, TestID: c.Run.TestID, RunIndex: c.Run.Index, Direction: string(c.Direction), Before: c.Before, After: c.After})
			rep.unreportedAt = append(rep.unreportedAt, len(rep.Changes))
		}
		rep.Changes = append(rep.Changes, rc)
	}
	for _, g := range an.gone(stored, matched) {
		if g.Run.Index >= since {
			rep.Gone = append(rep.Gone, g)
		}
	}
	for _, o := range an.Result.Outliers {
		if o.Run.Index >= since {
			rep.Outliers = append(rep.Outliers, o)
		}
	}
	for _, sp := range an.Result.Suspected {
		if sp.Run.Index >= since {
			rep.Suspected = append(rep.Suspected, sp)
		}
	}
	if tol != nil {
		rep.Drift = an.drift(since, *tol)
	}
	return rep
}

// match finds the stored change a found one is: the same id, else the
// nearest one of its series and direction within the minimum segment,
// placed by its commit's run in the line as it is now (by the index it
// was reported at when its commit is no longer in the line).
func (an *Analysis) match(stored []runstore.StoredChange, c changepoint.Change) *runstore.StoredChange {
	var best *runstore.StoredChange
	bestD := an.near() + 1
	for i := range stored {
		m := &stored[i]
		if m.ID == c.ID {
			return m
		}
		if m.Figure != c.Figure || m.Endpoint != c.Endpoint || changepoint.Direction(m.Direction) != c.Direction {
			continue
		}
		at := an.storedAt(*m)
		if at == 0 {
			at = m.RunIndex // its run left the line: the change may lie next to where it was
		}
		if d := abs(at - c.Run.Index); d < bestD {
			best, bestD = m, d
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// drift is each series' drift against the envelope's tolerance for its
// figure: from run since when given, else from the envelope's latest run
// (DriftFrom) or the start of the series' last segment (the level its
// latest change point set), whichever is later, so that a step already
// reported is not counted again as drift. The error rate, whose
// tolerance is absolute, has none.
func (an *Analysis) drift(since int, tol figures.Tolerance) []changepoint.Drift {
	last := map[changepoint.Key]int{}
	for _, c := range an.Result.Changes {
		last[c.Key] = max(last[c.Key], c.Run.Index)
	}
	out := []changepoint.Drift{}
	for _, k := range an.Analyzer.Keys() {
		t, ok := tol.Relative(k.Figure)
		if !ok {
			continue
		}
		from := since
		if from <= 1 {
			from = max(1, an.DriftFrom, last[k])
		}
		d, err := an.Analyzer.Drift(k, from, t)
		if err != nil {
			continue // too few runs since: no slope to give
		}
		out = append(out, d)
	}
	return out
}
