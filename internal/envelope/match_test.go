package envelope

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/figures"
)

func TestParseMatch(t *testing.T) {
	for _, tt := range []struct {
		match, canonical, err string
	}{
		{match: ``, canonical: ``},
		{match: `envelope="checkout-native-50vu"`, canonical: `envelope="checkout-native-50vu"`},
		{match: ` scenario="baseline_mix",testid=~"nightly-.*" `, canonical: `scenario="baseline_mix", testid=~"nightly-.*"`},
		{match: `job!="smoke", envelope="a"`, canonical: `job!="smoke", envelope="a"`},
		{match: `{envelope="a"}`, err: "without braces"},
		{match: `envelope=a`, err: "not a list of PromQL label matchers"},
		{match: `testid=~"("`, err: "not a list of PromQL label matchers"},
		{match: `__name__="k6_http_reqs_total"`, err: "names the metric"},
		{match: `job=""`, err: "lack its labels"},
		{match: `testid!="x"`, err: "lack its labels"},
	} {
		t.Run(tt.match, func(t *testing.T) {
			_, err := ParseMatch(tt.match)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := (&Envelope{Match: tt.match}).Selector(); got != tt.canonical {
				t.Errorf("selector %q, want %q", got, tt.canonical)
			}
		})
	}
}

// A bad match in a file is reported with the file, line and field.
func TestMatchInFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	good := strings.Replace(string(b), "name: ecs-native-50vu-baseline-mix\n", "name: ecs-native-50vu-baseline-mix\nmatch: 'envelope=\"checkout\", testid=~\"nightly-.*\"'\n", 1)
	env, err := Parse("good.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if env.Match != `envelope="checkout", testid=~"nightly-.*"` {
		t.Errorf("match %q", env.Match)
	}
	bad := strings.Replace(string(b), "name: ecs-native-50vu-baseline-mix\n", "name: ecs-native-50vu-baseline-mix\nmatch: 'envelope=checkout'\n", 1)
	_, err = Parse("bad.yaml", []byte(bad))
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:4: field match:") {
		t.Fatalf("err = %v, want file, line and field match", err)
	}
}

// A match that selects none (or some) of the baseline's own runs is
// said, with the test-wide tags the runs carry; one that selects every
// run, and runs without points (summaries), say nothing.
func TestCheckMatchRuns(t *testing.T) {
	run := func(file, testid string) figures.Run {
		return figures.Run{Source: file, Tags: map[string][]string{"testid": {testid}, "name": {"home", "login"}}}
	}
	in := []figures.Run{run("run-1.ndjson", "run-1"), run("run-2.ndjson", "run-2")}
	tests := []struct {
		match string
		in    []figures.Run
		want  []string // substrings of the one warning; nil for none
	}{
		{`envelope="my-baseline"`, in, []string{`--match envelope="my-baseline" selects none of the 2 runs`, "testid (run-1, run-2)", "--tag"}},
		{`foo="bar"`, in, []string{"selects none of the 2 runs"}},
		{`testid="run-1"`, in, []string{"selects 1 of the 2 runs (not run-2.ndjson)"}},
		{`testid=~"run-.*"`, in, nil},
		{`name="home"`, in, nil},
		{"", in, nil},
		{`envelope="x"`, []figures.Run{{Source: "a.json"}}, nil},
	}
	for _, tt := range tests {
		var w warnings
		checkMatchRuns(tt.match, tt.in, &w)
		if tt.want == nil {
			if len(w) != 0 {
				t.Errorf("%s: warned %q", tt.match, w)
			}
			continue
		}
		if len(w) != 1 {
			t.Errorf("%s: warnings %q, want one", tt.match, w)
			continue
		}
		for _, s := range tt.want {
			if !strings.Contains(w[0], s) {
				t.Errorf("%s: warning %q lacks %q", tt.match, w[0], s)
			}
		}
	}
}
