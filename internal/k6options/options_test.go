package k6options

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// The fixture is a real `k6 inspect` output: scenario "arrival"
// (ramping-arrival-rate, startRate 5, stages 3s→10, 2s→10, 2s→2) and
// "closed" (constant-vus, 1 VU for 4s from 1s).
func TestLoadInspectFixture(t *testing.T) {
	o, err := Load(fixtures.Path(t, "k6/generated-v2.2.0/script.k6-inspect.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Scenarios) != 2 || o.Scenarios[0].Name != "arrival" || o.Scenarios[1].Name != "closed" {
		t.Fatalf("scenarios %+v", o.Scenarios)
	}
	sc, err := o.Scenario("")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "arrival" || sc.Executor != "ramping-arrival-rate" || sc.MaxVUs != 5 || sc.PreAllocatedVUs != 2 || sc.Tags["scenario_kind"] != "open" {
		t.Errorf("arrival = %+v", sc)
	}
	want := []Window{
		{1, 0, 3 * time.Second, 5, 10, "rps"},
		{2, 3 * time.Second, 5 * time.Second, 10, 10, "rps"},
		{3, 5 * time.Second, 7 * time.Second, 10, 2, "rps"},
	}
	got := sc.Windows()
	if len(got) != len(want) {
		t.Fatalf("windows %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("window %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	closed, err := o.Scenario("closed")
	if err != nil {
		t.Fatal(err)
	}
	w := closed.Windows()
	if len(w) != 1 || w[0].Start != time.Second || w[0].End != 5*time.Second || w[0].From != 1 || w[0].Unit != "VUs" {
		t.Errorf("closed windows %+v", w)
	}
	if _, err := o.Scenario("nope"); err == nil || !strings.Contains(err.Error(), "arrival, closed") {
		t.Errorf("unknown scenario error %v should list the scenarios", err)
	}
}

func TestParseVariants(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		executor   string
		windows    int
		firstTo    float64
		err        string
	}{
		{"top-level stages", `{"stages":[{"duration":"1m","target":10},{"duration":"30s","target":0}]}`, "ramping-vus", 2, 10, ""},
		{"vus and duration", `{"vus":5,"duration":"2m"}`, "constant-vus", 1, 5, ""},
		{"timeUnit per minute", `{"scenarios":{"a":{"executor":"ramping-arrival-rate","timeUnit":"1m","startRate":60,"stages":[{"duration":"1m","target":120}]}}}`, "ramping-arrival-rate", 1, 2, ""},
		{"numeric ms duration", `{"scenarios":{"a":{"executor":"constant-arrival-rate","rate":3,"duration":60000}}}`, "constant-arrival-rate", 1, 3, ""},
		{"nothing", `{"vus":null}`, "", 0, 0, "nothing describes the load shape"},
		{"bad stage duration", `{"scenarios":{"a":{"executor":"ramping-vus","stages":[{"duration":"soon","target":1}]}}}`, "", 0, 0, "scenarios.a.stages[0].duration"},
		{"missing target", `{"scenarios":{"a":{"executor":"ramping-vus","stages":[{"duration":"1s"}]}}}`, "", 0, 0, "stages[0].target: missing"},
		{"missing executor", `{"scenarios":{"a":{}}}`, "", 0, 0, "scenarios.a.executor: missing"},
		{"not json", `stages`, "", 0, 0, "not k6 inspect JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse("x.json", strings.NewReader(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "x.json") {
					t.Fatalf("error %v, want one naming x.json and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sc := o.Scenarios[0]
			w := sc.Windows()
			if sc.Executor != tc.executor || len(w) != tc.windows || w[0].To != tc.firstTo {
				t.Errorf("got %s %+v", sc.Executor, w)
			}
		})
	}
}

func TestParseStages(t *testing.T) {
	sc, err := ParseStages("5m:1,5m:10, 5m:50", "")
	if err != nil {
		t.Fatal(err)
	}
	w := sc.Windows()
	// The benchmark report's workload shape: 0-300s 0→1, 300-600s 1→10, 600-900s 10→50.
	want := []Window{
		{1, 0, 300 * time.Second, 0, 1, "rps"},
		{2, 300 * time.Second, 600 * time.Second, 1, 10, "rps"},
		{3, 600 * time.Second, 900 * time.Second, 10, 50, "rps"},
	}
	for i := range want {
		if w[i] != want[i] {
			t.Errorf("window %d = %+v, want %+v", i, w[i], want[i])
		}
	}
	if sc.ScheduledDuration() != 900*time.Second {
		t.Errorf("scheduled %v", sc.ScheduledDuration())
	}
	for _, bad := range []string{"5m", "5m:x", "0s:1", "5m:-1", "later:1", ""} {
		if _, err := ParseStages(bad, ""); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseStages("1m:1", "constant-vus"); err == nil {
		t.Error("constant-vus with stages accepted")
	}
}

func TestStagesPicksScenarios(t *testing.T) {
	ramp := `{"executor":"ramping-arrival-rate","startRate":0,"timeUnit":"1s","stages":[{"duration":"1m","target":5},{"duration":"1m","target":10}]%s}`
	for _, tc := range []struct {
		name, json, pick string
		want             string // scenario names in order
		shared, filtered bool
		err              string
	}{
		{"parallel", `{"scenarios":{"b":` + fmt.Sprintf(ramp, "") + `,"a":` + fmt.Sprintf(ramp, "") + `}}`, "", "b,a", true, false, ""},
		{"sequential", `{"scenarios":{"a":` + fmt.Sprintf(ramp, "") + `,"b":` + fmt.Sprintf(ramp, `,"startTime":"2m"`) + `}}`, "", "a,b", false, false, ""},
		{"filter", `{"scenarios":{"a":` + fmt.Sprintf(ramp, "") + `,"b":` + fmt.Sprintf(ramp, "") + `}}`, "b", "b", true, true, ""},
		{"unstaged left out", `{"scenarios":{"a":` + fmt.Sprintf(ramp, "") + `,"c":{"executor":"constant-vus","vus":1,"duration":"1m"}}}`, "", "a", true, true, ""},
		{"no stages anywhere", `{"scenarios":{"c":{"executor":"constant-vus","vus":1,"duration":"1m"},"d":{"executor":"constant-vus","vus":2,"duration":"1m"}}}`, "", "c,d", false, false, ""},
		{"unknown", `{"scenarios":{"a":` + fmt.Sprintf(ramp, "") + `}}`, "x", "", false, false, `--scenario "x": no such scenario (scenarios: a)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse("opts.json", strings.NewReader(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			st, err := o.Stages(tc.pick)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, sc := range st.Scenarios {
				names = append(names, sc.Name)
			}
			if strings.Join(names, ",") != tc.want || st.Shared != tc.shared || st.Filtered != tc.filtered {
				t.Errorf("got %v shared %v filtered %v; want %s shared %v filtered %v", names, st.Shared, st.Filtered, tc.want, tc.shared, tc.filtered)
			}
		})
	}
}
