package history

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// TestParseRuns: a run range's ends are run indexes, commits or testids,
// either left open; a range that is no run of the line, or runs
// backwards, is refused saying which end.
func TestParseRuns(t *testing.T) {
	runs := lineOf30(t, "c05").Runs // c06 is run 5
	runs[9].TestID = "run-ten"
	for _, c := range []struct {
		v        string
		from, to int
		err      string
	}{
		{"17..21", 17, 21, ""},
		{"c11..c24", 10, 23, ""},
		{"23..", 23, 29, ""},
		{"..c06", 1, 5, ""},
		{"run-ten", 10, 10, ""},
		{"12", 12, 12, ""},
		{"c05..c10", 0, 0, `"c05" is no run`},
		{"25..40", 0, 0, `"40" is no run of the line's 29`},
		{"21..17", 0, 0, "run 21 comes after run 17"},
		{"0..3", 0, 0, `"0" is no run`},
	} {
		from, to, err := ParseRuns(c.v, runs)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %d..%d, %v, want an error with %q", c.v, from, to, err, c.err)
			}
			continue
		}
		if err != nil || from != c.from || to != c.to {
			t.Errorf("%s: %d..%d, %v, want %d..%d", c.v, from, to, err, c.from, c.to)
		}
	}
}

// TestSelect: a selection picks the changes without a status of its
// series and runs, each placed by its commit's run in the line now.
func TestSelect(t *testing.T) {
	runs := lineOf30(t, "c05").Runs // c12 is run 11
	stored := []runstore.StoredChange{
		{ID: "a", Figure: "median", Endpoint: "upload", Commit: "c12", RunIndex: 12, Status: "new"},
		{ID: "b", Figure: "p95", Commit: "c24", RunIndex: 24, Status: "new"},
		{ID: "c", Figure: "median", Endpoint: "upload", Commit: "c24", RunIndex: 24, Status: "expected"},
		{ID: "d", Figure: "median", Endpoint: "upload", Commit: "c28", RunIndex: 28, Status: "new"},
	}
	ids := func(cs []runstore.StoredChange) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return strings.Join(out, " ")
	}
	med := figures.Key{Figure: "median", Endpoint: "upload"}
	for _, c := range []struct {
		sel  Selection
		want string
	}{
		{Selection{From: 11, To: 11}, "a"},
		{Selection{From: 12, To: 23}, "b"},
		{Selection{Series: &med}, "a d"},
		{Selection{Series: &med, From: 20}, "d"},
		{Selection{}, "a b d"},
	} {
		if got := ids(Select(stored, runs, c.sel)); got != c.want {
			t.Errorf("%+v: %q, want %q", c.sel, got, c.want)
		}
	}
}
