package k6options

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// checkWindows asserts what reports and rules rely on: windows follow one
// another in order, have a positive length and finite, non-negative
// targets.
func checkWindows(t *testing.T, sc Scenario) {
	t.Helper()
	var prev Window
	for i, w := range sc.Windows() {
		bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }
		switch {
		case w.End < w.Start:
			t.Fatalf("scenario %q window %d ends before it starts: %+v", sc.Name, i+1, w)
		case bad(w.From) || bad(w.To):
			t.Fatalf("scenario %q window %d: bad target %+v", sc.Name, i+1, w)
		case i > 0 && w.Start < prev.End:
			t.Fatalf("scenario %q window %d starts before window %d ends", sc.Name, i+1, i)
		}
		prev = w
	}
}

// FuzzParse reads arbitrary `k6 inspect` output: no panic, and every
// scenario it accepts yields well-ordered windows.
func FuzzParse(f *testing.F) {
	b, err := os.ReadFile(fixtures.Path(f, "k6/generated-v2.2.0/script.k6-inspect.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"scenarios":{"a":{"executor":"ramping-arrival-rate","stages":[{"duration":"1e30","target":1}]}}}`))
	f.Add([]byte(`{"scenarios":{"a":{"executor":"constant-vus","vus":1,"duration":1e300,"startTime":"-1s"}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		o, err := Parse("fuzz.json", bytes.NewReader(in))
		if err != nil {
			if o != nil {
				t.Fatal("options with an error")
			}
			return
		}
		for _, sc := range o.Scenarios {
			if sc.StartTime < 0 || sc.Duration < 0 || sc.GracefulStop < 0 || sc.TimeUnit < 0 {
				t.Fatalf("scenario %q: negative duration %+v", sc.Name, sc)
			}
			checkWindows(t, sc)
		}
	})
}

// FuzzParseStages reads arbitrary --stages strings: no panic, and an
// accepted list has one positive-length stage per comma-separated part
// with a finite, non-negative target.
func FuzzParseStages(f *testing.F) {
	for _, s := range []string{"5m:1,5m:10, 5m:50", "30s:0", "1500:2.5", "1m30s:1,", "NaN:1", "1s:Inf", "1e30:1"} {
		f.Add(s, "")
	}
	f.Add("2m:5,1m:0", "ramping-vus")
	f.Fuzz(func(t *testing.T, spec, executor string) {
		sc, err := ParseStages(spec, executor)
		if err != nil {
			if sc != nil {
				t.Fatal("scenario with an error")
			}
			return
		}
		if n := len(strings.Split(spec, ",")); len(sc.Stages) != n {
			t.Fatalf("%d stages from %d parts", len(sc.Stages), n)
		}
		for i, st := range sc.Stages {
			if st.Duration <= 0 || math.IsNaN(st.Target) || math.IsInf(st.Target, 0) || st.Target < 0 {
				t.Fatalf("stage %d: %+v", i+1, st)
			}
		}
		checkWindows(t, *sc)
	})
}
