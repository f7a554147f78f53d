package changepoint

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// historyRun is one fixture run's figures, computed by the baseline's
// own per-run code, keyed by series.
type historyRun struct {
	commit  string
	figures map[Key]Run
	file    string
}

var (
	historyOnce sync.Once
	historyRuns []historyRun
	historyEnv  *envelope.Envelope
	historyErr  error
)

// loadHistory reads the 30 real runs of the history fixture in commit
// order and computes each run's figures as the baseline does (its
// statistics, with p99 and the order-statistic intervals from points).
func loadHistory(tb testing.TB) ([]historyRun, *envelope.Envelope) {
	tb.Helper()
	files := fixtures.Glob(tb, "k6/history-v2.2.0/run-*.ndjson.gz")
	historyOnce.Do(func() {
		in, err := figures.ReadFiles(files, figures.LoadOptions(0, ""))
		if err != nil {
			historyErr = err
			return
		}
		commit := func(r figures.Run) string { return r.Tag("commit") }
		file := map[string]string{}
		for i, r := range in {
			file[r.Source] = files[i]
		}
		slices.SortStableFunc(in, func(a, b figures.Run) int { return cmp.Compare(commit(a), commit(b)) })
		env, err := envelope.Compute(in, envelope.Options{Name: "history-shared"})
		if err != nil {
			historyErr = err
			return
		}
		historyEnv = env
		for i, r := range env.Runs {
			historyRuns = append(historyRuns, historyRun{commit: commit(in[i]), figures: runFigures("history-shared", r.Run, commit(in[i])), file: file[in[i].Source]})
		}
	})
	if historyErr != nil {
		tb.Fatal(historyErr)
	}
	return historyRuns, historyEnv
}

// runFigures turns one run's figures into one Run per series, as a
// history records them.
func runFigures(test string, r figures.Run, commit string) map[Key]Run {
	out := map[Key]Run{}
	for _, f := range r.Figures() {
		run := Run{Commit: commit, Value: f.X, Count: f.Count}
		if f.CI != nil {
			run.Lo, run.Hi = f.CI.Low, f.CI.High
		}
		out[Key{Test: test, Figure: f.Key.Figure, Endpoint: f.Key.Endpoint}] = run
	}
	return out
}

// historySeries are the fixture's series in a fixed order.
func historySeries(runs []historyRun) []Series {
	var keys []Key
	for k := range runs[0].figures {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int { return cmp.Compare(a.String(), b.String()) })
	out := make([]Series, 0, len(keys))
	for _, k := range keys {
		s := Series{Key: k, Polarity: k.Figure.Def().Polarity}
		for _, r := range runs {
			s.Runs = append(s.Runs, r.figures[k])
		}
		out = append(out, s)
	}
	return out
}

// The known changes of the history fixture (its CHANGES.txt): upload
// latency ×1.2 from run 11, auth latency ×0.9 from run 23, and run 20
// alone with actor latency ×1.6. Each is found at its run or within the
// minimum segment after it, with its direction, in the figures it moved
// that the runs have requests enough to estimate; the one-off slow run
// is an outlier, never a change; nothing else moves.
func TestHistoryFixture(t *testing.T) {
	runs, _ := loadHistory(t)
	res, err := Analyze(Config{}, historySeries(runs))
	if err != nil {
		t.Fatal(err)
	}
	minRuns := DefaultConfig().MinRuns
	type truth struct {
		from      int
		direction Direction
	}
	uploadAt, authAt := truth{11, Regression}, truth{23, Improvement}
	latency := figures.LatencyNames()
	// Where a change may be found: the endpoint's own latency figures and
	// the aggregate latency figures, which mix every endpoint.
	allowed := map[Key][]truth{}
	for _, f := range latency {
		allowed[Key{"history-shared", f, "document_upload"}] = []truth{uploadAt}
		allowed[Key{"history-shared", f, "auth_login"}] = []truth{authAt}
		allowed[Key{"history-shared", f, "auth_register"}] = []truth{authAt}
		allowed[Key{"history-shared", f, ""}] = []truth{uploadAt, authAt}
	}
	found := map[Key]bool{}
	for _, c := range res.Changes {
		ok := false
		for _, tr := range allowed[c.Key] {
			if c.Run.Index >= tr.from && c.Run.Index < tr.from+minRuns && c.Direction == tr.direction {
				ok = true
			}
		}
		if !ok {
			t.Errorf("false change point: %s at run %d (%s), %s %+.1f%%, p %.2g", c.Key, c.Run.Index, c.Run.Commit, c.Direction, 100*c.Change, c.P)
		}
		if c.Run.Commit != fmt.Sprintf("c%02d", c.Run.Index) || c.ID != ChangeID(c.Key, c.Run.Commit) {
			t.Errorf("%s: run %+v, id %s", c.Key, c.Run, c.ID)
		}
		found[c.Key] = true
		t.Logf("change %s at run %d, %s %.4g → %.4g (%+.1f%%), p %.2g, q %.2g", c.Key, c.Run.Index, c.Direction, c.Before, c.After, 100*c.Change, c.P, c.Q)
	}
	// Found where the change is plain in every run: the upload's and the
	// registration's latency (±20% and −10% against a run-to-run spread
	// of 5–10%), and the aggregate tail that auth dominates. The login's
	// own shift (−5% at the median against a 6% spread, 8 runs after it)
	// and the aggregate average's are below what 8 runs can show at the
	// default false discovery rate: allowed, not required.
	for _, f := range []figures.Name{figures.Avg, figures.Median} {
		for _, ep := range []string{"document_upload", "auth_register"} {
			if k := (Key{"history-shared", f, ep}); !found[k] {
				t.Errorf("no change point in %s", k)
			}
		}
	}
	for _, f := range []figures.Name{figures.P95, figures.P99} {
		if k := (Key{"history-shared", f, ""}); !found[k] {
			t.Errorf("no change point in %s", k)
		}
	}
	// The upload (about 60 requests a run) and the registration (about
	// 100) estimate neither p95 nor p99, the login (about 340) no p99:
	// those series are not analysed, and say what a run would need.
	notAnalysed := map[Key]NotAnalysed{}
	for _, na := range res.NotAnalysed {
		notAnalysed[na.Key] = na
		t.Logf("not analysed %s: %d runs of at most %d requests, %d needed", na.Key, na.Runs, na.MostRequests, na.RequestsNeeded)
		if found[na.Key] && na.Analysed == 0 {
			t.Errorf("%s: a change point in a series not analysed", na.Key)
		}
	}
	for _, k := range []Key{{"history-shared", figures.P95, "document_upload"}, {"history-shared", figures.P99, "document_upload"},
		{"history-shared", figures.P95, "auth_register"}, {"history-shared", figures.P99, "auth_register"}, {"history-shared", figures.P99, "auth_login"}} {
		na, ok := notAnalysed[k]
		if want := k.Figure.Def().RequestsNeeded(); !ok || na.Runs != len(runs) || na.Analysed != 0 || na.RequestsNeeded != want || na.MostRequests >= want {
			t.Errorf("%s: not analysed %+v, want all %d runs, under %d requests", k, na, len(runs), want)
		}
	}
	if len(res.NotAnalysed) != 5 {
		t.Errorf("%d series not analysed, want 5", len(res.NotAnalysed))
	}
	// Run 20: an outlier in the actor's latency, and in no series a change.
	slow := 0
	for _, o := range res.Outliers {
		t.Logf("outlier %s at run %d, %s %.4g against %.4g (%+.1f%%, %.1fσ)", o.Key, o.Run.Index, o.Direction, o.Value, o.SegmentMean, 100*o.Change, o.Sigmas)
		if o.Run.Index == 20 && o.Endpoint == "actor_get" && o.Direction == Regression {
			slow++
		}
	}
	if slow < 2 {
		t.Errorf("run 20 is an outlier in %d actor_get figures, want at least its median and average", slow)
	}

	// Drift since the first run against the envelope's 10% latency
	// tolerance: the upload's +20% passes it, the actor's level (run 20
	// aside) does not move.
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range historySeries(runs) {
		for _, r := range s.Runs {
			if err := a.Append(s.Key, s.Polarity, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		key  Key
		over bool
	}{{Key{"history-shared", "median", "document_upload"}, true}, {Key{"history-shared", "median", "actor_get"}, false}} {
		d, err := a.Drift(tc.key, 1, 0.10)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("drift of %s since run 1: %+.1f%% [%+.1f%%, %+.1f%%] over %d runs, over tolerance %v", tc.key, 100*d.Change, 100*d.CI[0], 100*d.CI[1], d.Runs, d.OverTolerance)
		if d.OverTolerance != tc.over || (tc.over && d.Direction != Regression) {
			t.Errorf("drift of %s: %+v", tc.key, d)
		}
	}
}

// Appending the runs one at a time, and reading the result after each,
// gives at every length the answer of a from-scratch analysis of the
// same runs.
func TestIncrementalEqualsScratch(t *testing.T) {
	runs, _ := loadHistory(t)
	all := historySeries(runs)
	inc, err := New(Config{Window: 12, MinRuns: 3})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= len(runs); n++ {
		prefix := make([]Series, len(all))
		for i, s := range all {
			prefix[i] = Series{Key: s.Key, Polarity: s.Polarity, Runs: s.Runs[:n]}
			if err := inc.Append(s.Key, s.Polarity, s.Runs[n-1]); err != nil {
				t.Fatal(err)
			}
		}
		got := inc.Result()
		want, err := Analyze(Config{Window: 12, MinRuns: 3}, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %d runs: incremental %+v, from scratch %+v", n, got, want)
		}
	}
}
