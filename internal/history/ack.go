package history

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// Selection picks reported changes for `history ack`: of one series
// (nil: any), at runs From to To of the line, both included (0: open).
type Selection struct {
	Series   *figures.Key
	From, To int
}

// ParseRuns reads a run range of a line (runs, in its order) as
// FROM..TO, each end a run index, a commit or a testid, either end left
// out for the line's first or last run (17..21, c11..c24, 23..); a
// single run is FROM alone.
func ParseRuns(v string, runs []runstore.Run) (from, to int, err error) {
	lo, hi, isRange := strings.Cut(v, "..")
	if !isRange {
		hi = lo
	}
	end := func(s string, open int) (int, error) {
		if s == "" {
			return open, nil
		}
		if i := indexOf(runs, s); i > 0 {
			return i, nil
		}
		if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(runs) {
			return n, nil
		}
		return 0, fmt.Errorf("runs %q: %q is no run of the line's %d (give a run index, a commit or a testid)", v, s, len(runs))
	}
	if from, err = end(lo, 1); err != nil {
		return 0, 0, err
	}
	if to, err = end(hi, len(runs)); err != nil {
		return 0, 0, err
	}
	if from > to {
		return 0, 0, fmt.Errorf("runs %q: run %d comes after run %d", v, from, to)
	}
	return from, to, nil
}

// Select lists the reported changes the selection picks that nobody
// has given a status yet, each placed by its commit's run in the line as
// it is now (runs), else by the index it was reported at.
func Select(stored []runstore.StoredChange, runs []runstore.Run, sel Selection) []runstore.StoredChange {
	var out []runstore.StoredChange
	for _, c := range stored {
		if Status(c.Status) != StatusNew {
			continue
		}
		if sel.Series != nil && (c.Figure != sel.Series.Figure || c.Endpoint != sel.Series.Endpoint) {
			continue
		}
		at := c.RunIndex
		if i := indexOf(runs, c.Commit); c.Commit != "" && i > 0 {
			at = i
		}
		if sel.From > 0 && at < sel.From || sel.To > 0 && at > sel.To {
			continue
		}
		out = append(out, c)
	}
	return out
}
