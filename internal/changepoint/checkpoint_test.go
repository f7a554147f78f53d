package changepoint

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/envelope-dev/envelope/internal/figures"
)

// checkpointSeries are series that exercise every part of the state:
// steps, outlier runs (some before any tail), intervals and counts, an
// error rate that is always 0 (the linear scale), and an endpoint that
// appears late (its runs placed by the line's index).
func checkpointSeries(n int) []Series {
	rng := rand.New(rand.NewPCG(11, 3))
	var out []Series
	for j := range 6 {
		k := Key{"cp", []figures.Name{figures.Median, figures.P95, figures.RPS}[j%3], fmt.Sprintf("ep%d", j/3)}
		s := Series{Key: k, Polarity: k.Figure.Def().Polarity}
		for i := range n {
			if j == 5 && i < n/3 {
				continue // an endpoint the first runs did not call
			}
			y := math.Log(50) + 0.05*rng.NormFloat64()
			if i > n/2 {
				y += 0.2 * float64(j%2)
			}
			if i > n/5 && i < n/4 && j < 3 {
				y -= 0.15
			}
			if rng.IntN(60) == 0 {
				y += 0.6
			}
			r := Run{Index: i + 1, Commit: fmt.Sprintf("c%04d", i), Value: math.Exp(y), Count: int64(300 + rng.IntN(2000))}
			if k.Figure == "p95" {
				r.Lo, r.Hi = r.Value*0.93, r.Value*1.08
			}
			s.Runs = append(s.Runs, r)
		}
		out = append(out, s)
	}
	zero := Series{Key: Key{"cp", "error_rate", ""}, Polarity: figures.HigherIsWorse}
	for i := range n {
		zero.Runs = append(zero.Runs, Run{Index: i + 1, Commit: fmt.Sprintf("c%04d", i), Count: 2000})
	}
	return append(out, zero)
}

// appendRuns appends the runs with line index in (from, to].
func appendRuns(t *testing.T, a *Analyzer, all []Series, from, to int) {
	t.Helper()
	for _, s := range all {
		for _, r := range s.Runs {
			if r.Index > from && r.Index <= to {
				if err := a.Append(s.Key, s.Polarity, r); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func scratch(t *testing.T, cfg Config, all []Series, n int) Result {
	t.Helper()
	prefix := make([]Series, len(all))
	for i, s := range all {
		prefix[i] = Series{Key: s.Key, Polarity: s.Polarity}
		for _, r := range s.Runs {
			if r.Index <= n {
				prefix[i].Runs = append(prefix[i].Runs, r)
			}
		}
	}
	res, err := Analyze(cfg, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// An analyzer restored from a checkpoint and given more runs, one at a
// time or many, checkpointed and restored again along the way, answers
// at every length as the from-scratch analysis of the same runs does.
func TestCheckpointEqualsScratch(t *testing.T) {
	const n = 420
	all := checkpointSeries(n)
	for _, cfg := range []Config{{}, {Window: 24, MinRuns: 3}, {Window: 12, MinRuns: 3}} {
		for _, first := range []int{7, 60, 133, 250} {
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			appendRuns(t, a, all, 0, first)
			a.Result()
			at, step := first, 1
			for at < n {
				data, err := a.Checkpoint()
				if err != nil {
					t.Fatal(err)
				}
				if a, err = Restore(data); err != nil {
					t.Fatal(err)
				}
				next := min(n, at+step)
				appendRuns(t, a, all, at, next)
				got := a.Result()
				if want := scratch(t, cfg, all, next); !reflect.DeepEqual(got, want) {
					t.Fatalf("window %d, checkpoint at %d, %d runs: restored %+v\nfrom scratch %+v", cfg.Window, at, next, got, want)
				}
				at, step = next, step*2%37+1
			}
			if len(a.Result().Changes) == 0 || len(a.Result().Outliers) == 0 {
				t.Fatalf("nothing found: the test exercises nothing")
			}
		}
	}
}

// What a checkpoint cannot answer is refused, never answered wrongly: a
// series turning to the linear scale, a drift reaching before the tail,
// a checkpoint of runs not yet analysed, a damaged checkpoint.
func TestCheckpointLimits(t *testing.T) {
	all := checkpointSeries(300)
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	appendRuns(t, a, all, 0, 300)
	if _, err := a.Checkpoint(); err == nil {
		t.Error("checkpoint before Result: no error")
	}
	a.Result()
	data, err := a.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Restore(data)
	if err != nil {
		t.Fatal(err)
	}
	k := all[0].Key
	if err := r.Append(k, all[0].Polarity, Run{Index: 301, Value: 0}); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("a 0 in a log-scale series: %v", err)
	}
	if _, err := r.Drift(k, 1, 0.1); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("drift from run 1: %v", err)
	}
	if _, err := Restore(data[:len(data)/2]); err == nil {
		t.Error("half a checkpoint restored")
	}
	t.Logf("checkpoint of 7 series × 300 runs: %d bytes", len(data))
}
