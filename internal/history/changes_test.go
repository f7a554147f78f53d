package history

import (
	"fmt"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// TestParseStatus: ack sets only the statuses someone gives a change;
// new is no such status, nor is an unknown word.
func TestParseStatus(t *testing.T) {
	for _, v := range AckStatuses() {
		if s, err := ParseStatus(v); err != nil || string(s) != v {
			t.Errorf("%s: %s, %v", v, s, err)
		}
	}
	for _, v := range []string{string(StatusNew), "done", ""} {
		if _, err := ParseStatus(v); err == nil || !strings.Contains(err.Error(), "want one of") {
			t.Errorf("status %q: %v", v, err)
		}
	}
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
		an.Runs = append(an.Runs, runstore.Run{ID: int64(i + 1), Commit: fmt.Sprintf("c%02d", i+1)})
	}
	stored := []runstore.StoredChange{{ID: "s", Figure: "p95", Endpoint: "upload", Commit: "c12", RunIndex: 12, Direction: string(changepoint.Regression)}}
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
