package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/k6"
)

// Run is one recorded run's metadata.
type Run struct {
	ID         int64
	Test       string // the envelope's name, the run's envelope tag, or given
	TestID     string
	Commit     string
	CommitTime time.Time // zero when unknown
	Branch     string    // "" when unknown: read as the main line
	Version    string
	RunTime    time.Time // when the run started; zero for summaries
	DurationS  float64
	VUs        int
	SourceFile string
	Format     string
	SHA256     string // of the source file: with TestID, the run's identity
	Note       string
	Excluded   bool
	Reason     string // why it is excluded
	RecordedAt time.Time
}

// Time is the run's place in history: its commit's time, else its run
// time (zero when neither is known).
func (r Run) Time() time.Time {
	if !r.CommitTime.IsZero() {
		return r.CommitTime
	}
	return r.RunTime
}

// Figure is one figure of a run: an aggregate figure (Endpoint "") or an
// endpoint's, named as the envelope's per-run values are (FigureNames).
type Figure struct {
	Endpoint string
	Name     string
	Value    float64
	Count    int64              // samples behind it; 0 when unknown
	CI       *envelope.Interval // order-statistic interval of p95/p99, from points
}

// Key is the figure's name as the history commands take it:
// "endpoint.figure", or the figure alone for an aggregate one.
func (f Figure) Key() string {
	if f.Endpoint == "" {
		return f.Name
	}
	return f.Endpoint + "." + f.Name
}

// Record is a run with its figures, ready to be stored.
type Record struct {
	Run
	Figures []Figure
}

// Figure names of a run: the envelope's per-run values.
const (
	FigRPS             = "rps"
	FigIterationsPerS  = "iterations_per_s"
	FigRequestsPerIter = "requests_per_iteration"
	FigErrorRate       = "error_rate"
	FigAvg             = "avg"
	FigMedian          = "median"
	FigP95             = "p95"
	FigP99             = "p99"
	FigMax             = "max"
)

// figureNames are every figure a run can hold, aggregate ones first.
var figureNames = [...]string{FigRPS, FigIterationsPerS, FigRequestsPerIter, FigErrorRate, FigAvg, FigMedian, FigP95, FigP99, FigMax}

// endpointFigures are the figures an endpoint has.
var endpointFigures = map[string]bool{FigAvg: true, FigMedian: true, FigP95: true, FigP99: true, FigMax: true}

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

// Added is what recording one run did.
type Added struct {
	ID int64
	// Existing says the run was already recorded (the same testid and
	// content), so nothing was written.
	Existing bool
}

// Add records runs in one transaction: all of them or, on any error,
// none. A run already recorded (same testid and content hash) is left
// as it is and reported Existing, so recording twice is harmless.
func (s *Store) Add(ctx context.Context, recs []Record) ([]Added, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	insRun := s.d.rebind(`INSERT INTO runs (test, testid, content_hash, commit_id, commit_time, branch, version,
  run_time, duration_s, vus, source_file, format, note, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (testid, content_hash) DO NOTHING RETURNING id`)
	now := time.Now().UTC()
	out := make([]Added, 0, len(recs))
	for _, r := range recs {
		if r.SHA256 == "" {
			return nil, fmt.Errorf("%s: no content hash: a run is recorded once by testid and content hash", r.SourceFile)
		}
		var id int64
		err := tx.QueryRowContext(ctx, insRun, r.Test, r.TestID, r.SHA256, r.Commit, s.d.timeArg(r.CommitTime), r.Branch, r.Version,
			s.d.timeArg(r.RunTime), r.DurationS, r.VUs, r.SourceFile, r.Format, r.Note, s.d.timeArg(now)).Scan(&id)
		if errors.Is(err, errNoRows) {
			if err := tx.QueryRowContext(ctx, s.d.rebind("SELECT id FROM runs WHERE testid = ? AND content_hash = ?"), r.TestID, r.SHA256).Scan(&id); err != nil {
				return nil, fmt.Errorf("history %s: %s: %w", s.Where, r.SourceFile, err)
			}
			out = append(out, Added{ID: id, Existing: true})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("history %s: recording %s: %w", s.Where, r.SourceFile, err)
		}
		if err := s.addFigures(ctx, tx, id, r); err != nil {
			return nil, err
		}
		out = append(out, Added{ID: id})
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	return out, nil
}

// figureChunk is how many figures one INSERT writes: few statements per
// run, well within both back ends' limits on parameters.
const figureChunk = 100

// addFigures inserts a run's figures, many rows a statement.
func (s *Store) addFigures(ctx context.Context, tx *sql.Tx, id int64, r Record) error {
	for start := 0; start < len(r.Figures); start += figureChunk {
		chunk := r.Figures[start:min(start+figureChunk, len(r.Figures))]
		var q strings.Builder
		q.WriteString("INSERT INTO figures (run_id, endpoint, figure, value, count, ci_low, ci_high) VALUES ")
		args := make([]any, 0, 7*len(chunk))
		for i, f := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			var lo, hi, n any
			if f.CI != nil {
				lo, hi = f.CI.Low, f.CI.High
			}
			if f.Count > 0 {
				n = f.Count
			}
			args = append(args, id, f.Endpoint, f.Name, f.Value, n, lo, hi)
		}
		if _, err := tx.ExecContext(ctx, s.d.rebind(q.String()), args...); err != nil {
			return fmt.Errorf("history %s: recording %s's figures: %w", s.Where, r.SourceFile, err)
		}
	}
	return nil
}
