package envelope

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
