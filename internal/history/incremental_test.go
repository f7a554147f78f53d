package history

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// syntheticRecord is run i of a test with three endpoints' latency
// figures and the rates: a step in one endpoint from run 90, an outlier
// now and then, p95 intervals, and a fourth endpoint from run extraFrom.
func syntheticRecord(rng *rand.Rand, i, extraFrom int, t0 time.Time) runstore.Record {
	r := runstore.Record{Run: runstore.Run{Test: "inc", TestID: fmt.Sprintf("run-%03d", i), Commit: fmt.Sprintf("c%03d", i),
		CommitTime: t0.Add(time.Duration(i) * time.Hour), SHA256: fmt.Sprintf("h%03d", i), SourceFile: "run.json", Format: "summary"}}
	r.Figures = append(r.Figures, figures.KeyValue{Key: figures.Key{Figure: figures.RPS}, Value: figures.Value{X: 50 * math.Exp(0.01*rng.NormFloat64()), Count: 3000}},
		figures.KeyValue{Key: figures.Key{Figure: figures.ErrorRate}, Value: figures.Value{X: 0, Count: 3000}})
	eps := []string{"a", "b", "c"}
	if i >= extraFrom {
		eps = append(eps, "d")
	}
	for j, ep := range eps {
		y := math.Log(float64(10*(j+1))) + 0.04*rng.NormFloat64()
		if ep == "b" && i >= 90 {
			y += 0.25
		}
		if rng.IntN(40) == 0 {
			y += 0.7
		}
		med := math.Exp(y)
		p95 := 2.5 * med * math.Exp(0.05*rng.NormFloat64())
		r.Figures = append(r.Figures, figures.KeyValue{Key: figures.Key{Endpoint: ep, Figure: figures.Median}, Value: figures.Value{X: med, Count: 1000}},
			figures.KeyValue{Key: figures.Key{Endpoint: ep, Figure: figures.P95}, Value: figures.Value{X: p95, Count: 1000, CI: &figures.Interval{Low: p95 * 0.94, High: p95 * 1.07}}})
	}
	return r
}

// Recording runs one at a time and analysing with AnalyzeAppended after
// each gives, at every length, the from-scratch analysis (Analyze), on
// both back ends; most calls append to the stored checkpoint, and a run
// recorded out of commit-time order, an excluded run, its inclusion and
// a new endpoint make it start over, still with the same answer.
func TestAnalyzeAppendedEqualsScratch(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := open(t, dsn)
		rng := rand.New(rand.NewPCG(5, 5))
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		const n, extraFrom = 150, 140
		line := runstore.Line{Test: "inc"}
		appendedCalls := 0
		check := func(what string, wantAppended bool) {
			t.Helper()
			got, appended, err := AnalyzeAppended(ctx, s, line, changepoint.Config{})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			want, err := Analyze(ctx, s, line, changepoint.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Result, want.Result) || len(got.Runs) != len(want.Runs) {
				t.Fatalf("%s: appended %v\n%+v\nfrom scratch\n%+v", what, appended, got.Result, want.Result)
			}
			for i := range got.Runs {
				if got.Runs[i].ID != want.Runs[i].ID || got.Runs[i].Commit != want.Runs[i].Commit || got.Runs[i].TestID != want.Runs[i].TestID {
					t.Fatalf("%s: run %d: %+v, want %+v", what, i+1, got.Runs[i], want.Runs[i])
				}
			}
			if appended != wantAppended {
				t.Errorf("%s: appended %v, want %v", what, appended, wantAppended)
			}
			if appended {
				appendedCalls++
			}
		}
		late := syntheticRecord(rng, 0, extraFrom, t0.Add(-time.Hour))
		late.TestID, late.Commit, late.SHA256 = "late", "late", "late"
		for i := 1; i <= n; i++ {
			add(t, s, []runstore.Record{syntheticRecord(rng, i, extraFrom, t0)})
			switch i {
			case 100:
				// A run committed before every other, recorded now.
				add(t, s, []runstore.Record{late})
				check("a run recorded out of order", false)
			case 110:
				if _, err := s.Exclude(ctx, "run-050", "noisy host"); err != nil {
					t.Fatal(err)
				}
				check("run 50 excluded", false)
			case 120:
				if _, err := s.Include(ctx, "run-050"); err != nil {
					t.Fatal(err)
				}
				check("run 50 included", false)
			case 1, extraFrom:
				check(fmt.Sprintf("run %d", i), false)
			default:
				check(fmt.Sprintf("run %d", i), true)
			}
		}
		an, _, err := AnalyzeAppended(ctx, s, line, changepoint.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if len(an.Result.Changes) == 0 || len(an.Result.Outliers) == 0 || appendedCalls < n-10 {
			t.Errorf("%d changes, %d outliers, %d calls appended: the test exercises too little", len(an.Result.Changes), len(an.Result.Outliers), appendedCalls)
		}
	})
}
