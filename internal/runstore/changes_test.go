package runstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestChangeLifecycle stores reported change points on both back ends:
// each is stored first by one call only, with the status new, ack sets a
// status and a note, and an unknown id is refused. (Which statuses ack
// may set is history.ParseStatus's, tested there.)
func TestChangeLifecycle(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := open(t, dsn)
		cs := []StoredChange{
			{ID: "a1", Test: "t", Figure: "p95", Endpoint: "upload", Commit: "c11", RunIndex: 11, Direction: "regression", Before: 76, After: 96},
			{ID: "b2", Test: "t", Figure: "median", Commit: "c23", RunIndex: 23, Direction: "improvement", Before: 9, After: 8},
		}
		first, err := s.MarkReported(ctx, cs)
		if err != nil || !first[0] || !first[1] {
			t.Fatalf("first report: %v, %v", first, err)
		}
		again, err := s.MarkReported(ctx, cs[:1])
		if err != nil || again[0] {
			t.Fatalf("second report: %v, %v", again, err)
		}
		acked, err := s.Ack(ctx, []string{"a1"}, "false_positive", "noisy host")
		if err != nil || len(acked) != 1 {
			t.Fatalf("ack: %+v, %v", acked, err)
		}
		if c := acked[0]; c.Status != "false_positive" || c.Note != "noisy host" || c.Endpoint != "upload" || c.RunIndex != 11 || c.Before != 76 {
			t.Fatalf("ack: %+v", c)
		}
		got, err := s.StoredChanges(ctx, "t")
		if err != nil || len(got) != 2 || got[0].FirstReported.IsZero() {
			t.Fatalf("stored: %+v, %v", got, err)
		}
		for _, g := range got {
			want := map[string]string{"a1": "false_positive", "b2": "new"}[g.ID]
			if g.Status != want || g.Direction != map[string]string{"a1": "regression", "b2": "improvement"}[g.ID] {
				t.Errorf("%s: %s %s", g.ID, g.Status, g.Direction)
			}
		}
		// Several ids at once, all or none: an unknown one among them
		// sets none.
		if _, err := s.Ack(ctx, []string{"b2", "zz"}, "fixed", ""); err == nil || !strings.Contains(err.Error(), "no reported change point zz") {
			t.Errorf("ack of an unknown id: %v", err)
		}
		if got, err := s.StoredChanges(ctx, "t"); err != nil || got[1].Status != "new" {
			t.Errorf("after a failed ack, b2 is %+v, %v", got[1], err)
		}
		both, err := s.Ack(ctx, []string{"b2", "a1"}, "acknowledged", "one release")
		if err != nil || len(both) != 2 || both[0].ID != "b2" || both[1].ID != "a1" || both[0].Status != "acknowledged" || both[1].Note != "one release" {
			t.Errorf("ack of two: %+v, %v", both, err)
		}
	})
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
			cs = append(cs, StoredChange{ID: fmt.Sprintf("c%d", i), Test: "t", Figure: "p95", Commit: fmt.Sprintf("c%02d", i), RunIndex: i + 1, Direction: "regression"})
		}
		const jobs = 3
		firsts := make([][]bool, jobs)
		errs := make(chan error, jobs)
		for j := range jobs {
			s := open(t, dsn)
			go func() {
				var err error
				firsts[j], err = s.MarkReported(ctx, cs)
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
