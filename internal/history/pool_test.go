package history

import (
	"math"
	"testing"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// Runs of one commit that follow each other in the line are one point:
// their geometric mean, the least request count, the interval of the
// mean (its log half-width over √n for equal intervals), at the first
// run's index; runs without a commit, or of one commit apart, stay
// alone.
func TestPool(t *testing.T) {
	line := []runstore.Run{{Commit: "a"}, {Commit: "b"}, {Commit: "b"}, {Commit: "b"}, {Commit: ""}, {Commit: ""}, {Commit: "a"}}
	rs := []changepoint.Run{
		{Index: 1, Value: 10},
		{Index: 2, Value: 8, Count: 300, Lo: 8 / math.E, Hi: 8 * math.E},
		{Index: 3, Value: 16, Count: 200, Lo: 16 / math.E, Hi: 16 * math.E},
		{Index: 4, Value: 32, Count: 250, Lo: 32 / math.E, Hi: 32 * math.E},
		{Index: 5, Value: 5}, {Index: 6, Value: 5}, {Index: 7, Value: 10},
	}
	got := pool(rs, line)
	if len(got) != 5 {
		t.Fatalf("%d points: %+v", len(got), got)
	}
	p := got[1]
	if p.Index != 2 || p.Repeats != 3 || p.Count != 200 || math.Abs(p.Value-16) > 1e-9 ||
		math.Abs(math.Log(p.Hi/p.Value)-1/math.Sqrt(3)) > 1e-9 || math.Abs(math.Log(p.Value/p.Lo)-1/math.Sqrt(3)) > 1e-9 {
		t.Errorf("pooled point %+v", p)
	}
	for i, want := range []int{1, 2, 5, 6, 7} {
		if got[i].Index != want || i != 1 && got[i].Repeats != 0 {
			t.Errorf("point %d: %+v", i, got[i])
		}
	}
}
