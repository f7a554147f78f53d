package changepoint

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/envelope-dev/envelope/internal/figures"
)

// level returns n runs around base with log-normal noise of sd sigma,
// multiplied by factor(i).
func level(n int, base, sigma float64, seed uint64, factor func(i int) float64) []Run {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]Run, n)
	for i := range out {
		out[i] = Run{Commit: commitName(i), Value: base * factor(i) * math.Exp(sigma*rng.NormFloat64()), Count: 1000}
	}
	return out
}

func commitName(i int) string { return "c" + string(rune('A'+i/26)) + string(rune('a'+i%26)) }

func analyzeOne(t *testing.T, cfg Config, k Key, runs []Run) Result {
	t.Helper()
	res, err := Analyze(cfg, []Series{{Key: k, Polarity: k.Figure.Def().Polarity, Runs: runs}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestStepsOutliersAndPolarity(t *testing.T) {
	p95 := Key{"t", "p95", "login"}
	rps := Key{"t", "rps", ""}
	tests := []struct {
		name      string
		key       Key
		runs      []Run
		changes   []int // 1-based runs
		direction Direction
		outliers  []int
	}{
		{name: "flat", key: p95, runs: level(80, 100, 0.03, 1, func(int) float64 { return 1 })},
		{name: "step up in latency", key: p95, runs: level(80, 100, 0.03, 2, func(i int) float64 { return step(i, 40, 1.2) }),
			changes: []int{41}, direction: Regression},
		{name: "step up in throughput", key: rps, runs: level(80, 100, 0.03, 3, func(i int) float64 { return step(i, 40, 1.2) }),
			changes: []int{41}, direction: Improvement},
		{name: "drop in throughput", key: rps, runs: level(80, 100, 0.03, 4, func(i int) float64 { return step(i, 40, 0.8) }),
			changes: []int{41}, direction: Regression},
		{name: "lone slow run", key: p95, runs: level(80, 100, 0.03, 5, func(i int) float64 { return spike(i, 40, 1.6) }),
			outliers: []int{41}},
		{name: "two slow runs in a row", key: p95, runs: level(80, 100, 0.03, 6, func(i int) float64 { return spike(i, 40, 1.6) * spike(i, 41, 1.6) }),
			outliers: []int{41, 42}},
		{name: "a step two runs before the end is not yet a change", key: p95, runs: level(42, 100, 0.03, 7, func(i int) float64 { return step(i, 40, 1.3) })},
		{name: "three runs after it are", key: p95, runs: level(43, 100, 0.03, 7, func(i int) float64 { return step(i, 40, 1.3) }),
			changes: []int{41}, direction: Regression},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeOne(t, Config{}, tt.key, tt.runs)
			var got []int
			for _, c := range res.Changes {
				got = append(got, c.Run.Index)
				if c.Direction != tt.direction {
					t.Errorf("change at %d: %s, want %s", c.Run.Index, c.Direction, tt.direction)
				}
			}
			if !reflect.DeepEqual(got, tt.changes) {
				t.Errorf("changes at %v, want %v", got, tt.changes)
			}
			var outs []int
			for _, o := range res.Outliers {
				outs = append(outs, o.Run.Index)
				if o.Direction != Regression || o.Change < 0.4 || o.Sigmas < 4 {
					t.Errorf("outlier %+v", o)
				}
			}
			if !reflect.DeepEqual(outs, tt.outliers) {
				t.Errorf("outliers at %v, want %v", outs, tt.outliers)
			}
		})
	}
}

func step(i, at int, f float64) float64 {
	if i >= at {
		return f
	}
	return 1
}

func spike(i, at int, f float64) float64 {
	if i == at {
		return f
	}
	return 1
}

// A run's own sampling error weighs it: among runs whose p95 rests on
// 5,000 requests, a few resting on 50 (a wide interval) far off the level
// are neither outliers nor a change; the same values with narrow
// intervals are outliers.
func TestMeasurementErrorWeighs(t *testing.T) {
	k := Key{"t", "p95", "upload"}
	mk := func(wide bool) []Run {
		runs := level(60, 100, 0.02, 9, func(int) float64 { return 1 })
		for i := range runs {
			runs[i].Lo, runs[i].Hi = runs[i].Value*0.98, runs[i].Value*1.02
		}
		for _, i := range []int{20, 35, 50} {
			runs[i].Value *= 1.3
			runs[i].Lo, runs[i].Hi = runs[i].Value*0.99, runs[i].Value*1.01
			if wide {
				runs[i].Count = 50
				runs[i].Lo, runs[i].Hi = runs[i].Value*0.6, runs[i].Value*1.6
			}
		}
		return runs
	}
	if res := analyzeOne(t, Config{}, k, mk(true)); len(res.Changes)+len(res.Outliers) != 0 {
		t.Errorf("wide intervals: %+v", res)
	}
	if res := analyzeOne(t, Config{}, k, mk(false)); len(res.Outliers) != 3 || len(res.Changes) != 0 {
		t.Errorf("narrow intervals: %+v", res)
	}
}

// The false discovery rate is controlled across the family: a p-value
// that one series alone would report is not reported among many series
// that show nothing.
func TestFamily(t *testing.T) {
	pmax := DefaultConfig().PValue
	runs := level(40, 100, 0.05, 11, func(i int) float64 { return step(i, 30, 1.10) })
	one := analyzeOne(t, Config{}, Key{"t", "p95", "a"}, runs)
	if len(one.Changes) != 1 {
		t.Fatalf("one series: %+v", one)
	}
	// Reported alone, but too weak for a family of 61.
	p := one.Changes[0].P
	if p > pmax || p*61 <= pmax {
		t.Fatalf("p %.2g: the case needs PValue/61 < p ≤ PValue (%v)", p, pmax)
	}
	family := []Series{{Key: Key{"t", "p95", "a"}, Runs: runs}}
	for j := range 60 {
		family = append(family, Series{Key: Key{"t", "p95", commitName(j)}, Runs: level(40, 100, 0.05, uint64(100+j), func(int) float64 { return 1 })})
	}
	res, err := Analyze(Config{}, family)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Changes {
		if c.Endpoint == "a" {
			t.Errorf("p %.2g reported among 61 series: %+v", p, c)
		}
		if c.Q < c.P || c.Q > pmax {
			t.Errorf("q %v: below p %v or above %v", c.Q, c.P, pmax)
		}
	}
	if res.Series != 61 {
		t.Errorf("series = %d", res.Series)
	}
}

func TestDrift(t *testing.T) {
	k := Key{"t", "median", "a"}
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	flat, _ := New(Config{})
	for i, r := range level(40, 100, 0.02, 13, func(i int) float64 { return math.Pow(1.01, float64(max(0, i-10))) }) {
		if err := a.Append(k, figures.HigherIsWorse, r); err != nil {
			t.Fatal(err)
		}
		if err := flat.Append(k, figures.HigherIsWorse, level(40, 100, 0.02, 13, func(int) float64 { return 1 })[i]); err != nil {
			t.Fatal(err)
		}
	}
	d, err := a.Drift(k, 11, 0.10)
	if err != nil {
		t.Fatal(err)
	}
	// +1% a run for 29 runs: +33.5%.
	if !d.OverTolerance || d.Direction != Regression || math.Abs(d.PerRun-0.01) > 0.003 || d.CI[0] > 0.335 || d.CI[1] < 0.335 {
		t.Errorf("drift = %+v", d)
	}
	d, err = flat.Drift(k, 11, 0.10)
	if err != nil {
		t.Fatal(err)
	}
	if d.OverTolerance || d.CI[0] > 0 || d.CI[1] < 0 {
		t.Errorf("flat drift = %+v", d)
	}
	if _, err := a.Drift(k, 39, 0.1); err == nil {
		t.Error("a drift over 2 runs: no error")
	}
	if _, err := a.Drift(Key{"t", "p99", "a"}, 1, 0.1); err == nil {
		t.Error("an unknown series: no error")
	}
}

func TestBadInput(t *testing.T) {
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := Key{"t", "p95", ""}
	for _, r := range []Run{{Value: math.NaN()}, {Value: -1}, {Value: math.Inf(1)}, {Value: 1, Count: -2}, {Value: 1, Lo: 3, Hi: 2}} {
		if err := a.Append(k, figures.HigherIsWorse, r); !errors.Is(err, ErrBadValue) {
			t.Errorf("%+v: err = %v", r, err)
		}
	}
	if a.Len(k) != 0 {
		t.Errorf("bad runs were kept: %d", a.Len(k))
	}
	for _, c := range []Config{{MinRuns: 1}, {Window: 8}, {PValue: 0.2}, {Neighbours: 1}} {
		if _, err := New(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// Ids are stable: the same test, figure, endpoint and commit always give
// the same id, and any of them changed gives another.
func TestChangeID(t *testing.T) {
	k := Key{"checkout", "p95", "login"}
	id := ChangeID(k, "abc123")
	if id != ChangeID(k, "abc123") || len(id) != 16 {
		t.Fatalf("id %q", id)
	}
	for _, other := range []string{ChangeID(Key{"checkout", "p99", "login"}, "abc123"), ChangeID(Key{"checkout", "p95", ""}, "abc123"),
		ChangeID(Key{"other", "p95", "login"}, "abc123"), ChangeID(k, "abc124"), ChangeID(Key{"checkout", "p95login", ""}, "abc123")} {
		if other == id {
			t.Errorf("id collision %s", id)
		}
	}
}

// A series whose values reach 0 (an error rate) is analysed as is; the
// incremental answer still equals the from-scratch one at every length.
func TestIncrementalLinearAndLong(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 2))
	errs := make([]Run, 260)
	lat := level(260, 100, 0.04, 19, func(i int) float64 { return step(i, 90, 1.15) * spike(i, 150, 2) * step(i, 200, 0.8) })
	for i := range errs {
		v := 0.01 + 0.002*rng.NormFloat64()
		if i >= 120 {
			v += 0.02
		}
		if i%37 == 0 {
			v = 0
		}
		errs[i] = Run{Commit: commitName(i), Value: max(v, 0), Count: 1000}
	}
	ek, lk := Key{"t", "error_rate", ""}, Key{"t", "p95", ""}
	inc, _ := New(Config{})
	for n := 1; n <= len(errs); n++ {
		_ = inc.Append(ek, figures.HigherIsWorse, errs[n-1])
		_ = inc.Append(lk, figures.HigherIsWorse, lat[n-1])
		if n%7 != 0 && n != len(errs) {
			continue
		}
		got := inc.Result()
		want, err := Analyze(Config{}, []Series{{Key: ek, Runs: errs[:n]}, {Key: lk, Runs: lat[:n]}})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %d runs: incremental %+v, from scratch %+v", n, got, want)
		}
		if n == len(errs) {
			var at []int
			for _, c := range got.Changes {
				at = append(at, c.Run.Index)
			}
			if !reflect.DeepEqual(at, []int{121, 91, 201}) {
				t.Errorf("changes at %v, want 121 (error rate), 91 and 201 (p95)", at)
			}
		}
	}
}

// A series that lacks some of the line's runs (an endpoint some runs did
// not call) places its change points, outliers and drift by the line's
// run index, and the JSON carries the contract's fields.
func TestLineIndexAndJSON(t *testing.T) {
	k := Key{"t", "p95", "upload"}
	runs := level(60, 100, 0.03, 23, func(i int) float64 { return step(i, 30, 1.3) * spike(i, 45, 1.8) })
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		r.Index = 2*i + 1 // every other run of the line
		r.TestID = "run-" + r.Commit
		if err := a.Append(k, figures.HigherIsWorse, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Append(k, figures.HigherIsWorse, Run{Index: 3, Value: 1}); !errors.Is(err, ErrBadValue) {
		t.Errorf("an index going back: err = %v", err)
	}
	res := a.Result()
	if len(res.Changes) != 1 || res.Changes[0].Run.Index != 61 || res.Changes[0].Run.TestID != "run-"+commitName(30) {
		t.Fatalf("changes %+v, want one at line run 61", res.Changes)
	}
	if len(res.Outliers) != 1 || res.Outliers[0].Run.Index != 91 {
		t.Fatalf("outliers %+v, want one at line run 91", res.Outliers)
	}
	d, err := a.Drift(k, 62, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Since.Index != 63 || d.OverTolerance {
		t.Errorf("drift %+v, want since line run 63, flat", d)
	}
	b, err := json.Marshal(res.Changes[0])
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"id", "figure", "endpoint", "run", "direction", "before", "after", "change", "p"} {
		if _, ok := got[f]; !ok {
			t.Errorf("JSON %s lacks %q", b, f)
		}
	}
	if run := got["run"].(map[string]any); run["index"] != 61.0 || run["testid"] == nil || run["commit"] == nil {
		t.Errorf("JSON run %v", run)
	}
}

// Whatever the values, appending, analysing and encoding never fail
// beyond a refused value, and the incremental answer stays the
// from-scratch one.
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 200, 12, 12, 12, 12, 0, 0, 0, 0, 40, 40, 40, 40, 40, 40})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 5, 5, 5, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 400 {
			return
		}
		var runs []Run
		for i := 0; i+1 < len(data); i += 2 {
			v := float64(data[i]) * math.Pow(10, float64(int(data[i+1]%7)-3))
			r := Run{Commit: commitName(i / 2), Value: v, Count: int64(data[i+1])}
			if data[i+1]%3 == 0 {
				r.Lo, r.Hi = v*0.9, v*1.1
			}
			runs = append(runs, r)
		}
		keys := []Key{{"t", "p95", ""}, {"t", "rps", ""}}
		inc, _ := New(Config{Window: 12})
		for n, r := range runs {
			for _, k := range keys {
				if err := inc.Append(k, k.Figure.Def().Polarity, r); err != nil {
					t.Fatal(err)
				}
			}
			if n%5 == 0 {
				inc.Result()
			}
		}
		got := inc.Result()
		want, err := Analyze(Config{Window: 12}, []Series{{Key: keys[0], Runs: runs}, {Key: keys[1], Polarity: figures.LowerIsWorse, Runs: runs}})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("incremental %+v, from scratch %+v", got, want)
		}
		if _, err := json.Marshal(got); err != nil {
			t.Fatal(err)
		}
		if len(runs) > 0 {
			if d, err := inc.Drift(keys[0], 1, 0.1); err == nil {
				if _, err := json.Marshal(d); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// A run without a commit names its change by its test id, else by its
// index.
func TestChangeIDWithoutCommit(t *testing.T) {
	k := Key{"t", "p95", ""}
	for _, tc := range []struct {
		testID, want string
	}{{"run-41", ChangeID(k, "run-41")}, {"", ChangeID(k, "#41")}} {
		runs := level(60, 100, 0.03, 2, func(i int) float64 { return step(i, 40, 1.2) })
		for i := range runs {
			runs[i].Commit, runs[i].TestID = "", ""
		}
		runs[40].TestID = tc.testID
		res := analyzeOne(t, Config{}, k, runs)
		if len(res.Changes) != 1 || res.Changes[0].ID != tc.want {
			t.Errorf("test id %q: changes %+v, want id %s", tc.testID, res.Changes, tc.want)
		}
	}
}
