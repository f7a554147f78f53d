package history

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/changepoint"
)

// TestChangeLifecycle stores reported change points on both back ends:
// each is stored first by one call only, ack sets a status and a note,
// and bad ids and statuses are refused.
func TestChangeLifecycle(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := open(t, dsn)
		cs := []StoredChange{
			{ID: "a1", Test: "t", Figure: "p95", Endpoint: "upload", Commit: "c11", RunIndex: 11, Direction: changepoint.Regression, Before: 76, After: 96},
			{ID: "b2", Test: "t", Figure: "median", Commit: "c23", RunIndex: 23, Direction: changepoint.Improvement, Before: 9, After: 8},
		}
		first, err := s.ReportChanges(ctx, cs)
		if err != nil || !first[0] || !first[1] {
			t.Fatalf("first report: %v, %v", first, err)
		}
		again, err := s.ReportChanges(ctx, cs[:1])
		if err != nil || again[0] {
			t.Fatalf("second report: %v, %v", again, err)
		}
		c, err := s.Ack(ctx, "a1", StatusFalsePositive, "noisy host")
		if err != nil || c.Status != StatusFalsePositive || c.Note != "noisy host" || c.Endpoint != "upload" || c.RunIndex != 11 || c.Before != 76 {
			t.Fatalf("ack: %+v, %v", c, err)
		}
		got, err := s.StoredChanges(ctx, "t")
		if err != nil || len(got) != 2 || got[0].FirstReported.IsZero() {
			t.Fatalf("stored: %+v, %v", got, err)
		}
		for _, g := range got {
			want := map[string]Status{"a1": StatusFalsePositive, "b2": StatusNew}[g.ID]
			if g.Status != want || g.Direction != map[string]changepoint.Direction{"a1": changepoint.Regression, "b2": changepoint.Improvement}[g.ID] {
				t.Errorf("%s: %s %s", g.ID, g.Status, g.Direction)
			}
		}
		if _, err := s.Ack(ctx, "zz", StatusFixed, ""); err == nil || !strings.Contains(err.Error(), "no reported change point zz") {
			t.Errorf("ack of an unknown id: %v", err)
		}
		if _, err := s.Ack(ctx, "a1", StatusNew, ""); err == nil || !strings.Contains(err.Error(), "want one of") {
			t.Errorf("ack to new: %v", err)
		}
	})
}

// TestChangeMatch: a change found at another run than the stored one is
// the stored change when it lies in the same series and direction within
// the minimum segment, placed by its commit's current index (a run
// excluded before it moves it).
func TestChangeMatch(t *testing.T) {
	a, err := changepoint.New(changepoint.Config{MinRuns: 3})
	if err != nil {
		t.Fatal(err)
	}
	an := &Analysis{Test: "t", Analyzer: a}
	for i := range 30 {
		if i == 4 {
			continue // an excluded run: c12 is now run 11
		}
		an.Runs = append(an.Runs, Run{ID: int64(i + 1), Commit: fmt.Sprintf("c%02d", i+1)})
	}
	stored := []StoredChange{{ID: "s", Figure: "p95", Endpoint: "upload", Commit: "c12", RunIndex: 12, Direction: changepoint.Regression}}
	for _, c := range []struct {
		id    string
		index int
		ep    string
		dir   changepoint.Direction
		want  bool
	}{
		{"s", 20, "other", changepoint.Improvement, true}, // its own id
		{"x", 11, "upload", changepoint.Regression, true},
		{"x", 14, "upload", changepoint.Regression, true},
		{"x", 15, "upload", changepoint.Regression, false}, // 4 runs after c12's run 11
		{"x", 8, "upload", changepoint.Regression, true},
		{"x", 7, "upload", changepoint.Regression, false},
		{"x", 12, "upload", changepoint.Improvement, false},
		{"x", 12, "login", changepoint.Regression, false},
	} {
		ch := changepoint.Change{ID: c.id, Key: changepoint.Key{Figure: "p95", Endpoint: c.ep}, Run: changepoint.RunRef{Index: c.index}, Direction: c.dir}
		if got := an.match(stored, ch) != nil; got != c.want {
			t.Errorf("%+v: matched %v, want %v", c, got, c.want)
		}
	}
}

// TestChangeReportedOnce: two jobs reporting the same change points at
// the same moment, each through its own connection, store each once, and
// exactly one of them reports each as first.
func TestChangeReportedOnce(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		open(t, dsn) // migrated before the jobs start
		var cs []StoredChange
		for i := range 8 {
			cs = append(cs, StoredChange{ID: fmt.Sprintf("c%d", i), Test: "t", Figure: "p95", Commit: fmt.Sprintf("c%02d", i), RunIndex: i + 1, Direction: changepoint.Regression})
		}
		const jobs = 3
		firsts := make([][]bool, jobs)
		errs := make(chan error, jobs)
		for j := range jobs {
			s := open(t, dsn)
			go func() {
				var err error
				firsts[j], err = s.ReportChanges(ctx, cs)
				errs <- err
			}()
		}
		for range jobs {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		for i := range cs {
			n := 0
			for j := range jobs {
				if firsts[j][i] {
					n++
				}
			}
			if n != 1 {
				t.Errorf("change %s reported first by %d jobs", cs[i].ID, n)
			}
		}
		if got, err := open(t, dsn).StoredChanges(ctx, "t"); err != nil || len(got) != len(cs) {
			t.Errorf("%d changes stored, %v", len(got), err)
		}
	})
}
