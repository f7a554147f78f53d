package runstore

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

// Meta is what a user says about a run; set fields override the run's
// own tags.
type Meta struct {
	Test, Commit, Branch, Version, Note string
	CommitTime                          time.Time
}

// ErrNoTest is returned for a run that names no test.
var ErrNoTest = errors.New("no test name: the run carries no envelope tag (k6 --tag envelope=NAME); give one with --test")

// FromRun makes the record of one run's figures, read as every command
// reads a run (figures.ReadFiles with figures.LoadOptions), so a run
// recorded in history and the same run in an envelope agree to the last
// digit. Its metadata comes from the run's tags (commit, branch,
// version, testid, envelope) where meta leaves it unset.
func FromRun(r figures.Run, meta Meta) (Record, error) {
	src := r.Provenance
	rec := Record{Run: Run{
		Test: cmp.Or(meta.Test, r.Tag("envelope")), TestID: r.Tag("testid"), Commit: cmp.Or(meta.Commit, r.Tag("commit")),
		CommitTime: meta.CommitTime.UTC(), Branch: cmp.Or(meta.Branch, r.Tag("branch")), Version: cmp.Or(meta.Version, r.Tag("version")),
		RunTime: src.Start.UTC(), DurationS: r.DurationSeconds, VUs: r.Workload.VUs,
		SourceFile: cmp.Or(src.File, r.Source), Format: src.Format, SHA256: src.SHA256, Note: meta.Note,
	}}
	if rec.RunTime.Equal(time.Unix(0, 0)) {
		rec.RunTime = time.Time{}
	}
	if rec.Test == "" {
		return Record{}, fmt.Errorf("%s: %w", rec.SourceFile, ErrNoTest)
	}
	rec.Figures = r.Figures()
	return rec, nil
}

// RunFigures is the recorded run's figures as every command reads a
// run, the inverse of FromRun: a recorded run is judged, and enters an
// envelope, as the run read from its file would. What a history does not
// keep of a run (its scenarios and metric set, the warm-up cut) is
// unknown. Its source is its label, run N (file, commit).
func (rec Record) RunFigures() figures.Run {
	f := figures.Run{Source: rec.Label(), DurationSeconds: rec.DurationS, Workload: figures.Workload{VUs: rec.VUs},
		Provenance: figures.Source{File: rec.SourceFile, SHA256: rec.SHA256, Format: rec.Format, Start: rec.RunTime, TestID: rec.TestID}}
	for _, x := range rec.Figures {
		f.Set(x.Key, x.Value)
	}
	// A recorded run's error rate is of all its requests.
	f.Checked = f.Requests
	return f
}

// Envelope derives an envelope from recorded runs by the baseline method
// (envelope.Compute over their figures), as `envelope baseline` derives
// one from files; force accepts runs of different workloads, the
// differences as warnings, as `baseline --force` does. With a current
// envelope, the new one keeps its name, match, tolerance, workload,
// warm-up, grouping, endpoint labels and topology, so that it judges the
// same tests the same way.
func Envelope(recs []Record, cur *envelope.Envelope, name string, force bool) (*envelope.Envelope, error) {
	runs := make([]figures.Run, len(recs))
	for i, r := range recs {
		runs[i] = r.RunFigures()
		runs[i].Source = r.SourceFile
	}
	o := envelope.Options{Name: name, Force: force}
	if cur != nil {
		o.Name, o.Match, o.GroupBy = cmp.Or(name, cur.Name), cur.Match, cur.Provenance.GroupBy
		tol, w := cur.Tolerance, cur.Provenance.Workload
		o.Tolerance, o.Workload = &tol, &w
	}
	env, err := envelope.Compute(runs, o)
	if err != nil {
		return nil, err
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
