package envelope

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// Real k6 v2.2.0 summary exports of the baseline-mix workload (see
// testdata): three baseline runs, a regressed run with auth errors, and a
// 20-second run of the same script.
func TestRealFixtures(t *testing.T) {
	p := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if n == "regressed-auth-errors.summary.json" {
				out = append(out, filepath.Join("testdata", n))
			} else {
				out = append(out, fixtures.Path(t, "k6/baseline-mix-v2.2.0/"+n))
			}
		}
		return out
	}
	tests := []struct {
		name    string
		files   []string
		wantErr string
		verdict string
		reason  string
	}{
		{name: "three baselines", files: p("baseline-a.summary.json", "baseline-b.summary.json", "baseline-c.summary.json"),
			verdict: "below saturation", reason: "no error emergence: 0 of 60032 requests failed in 3 runs"},
		{name: "with the regressed run", files: p("baseline-a.summary.json", "baseline-b.summary.json", "regressed-auth-errors.summary.json"),
			verdict: "signs of saturation", reason: "error emergence: 18 of 59474 requests failed"},
		{name: "a short run among them", files: p("baseline-a.summary.json", "otlp-sample.summary.json"),
			wantErr: "duration: baseline-a.summary.json ran 6m1s, otlp-sample.summary.json ran 22s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := figures.ReadFiles(tt.files, figures.LoadOptions(0, ""))
			if err != nil {
				t.Fatal(err)
			}
			env, err := Compute(in, Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if env.Saturation.Verdict != tt.verdict || !strings.Contains(strings.Join(env.Saturation.Reasons, "\n"), tt.reason) {
				t.Errorf("saturation = %+v, want %q with %q", env.Saturation, tt.verdict, tt.reason)
			}
			// The four custom trends of the script become endpoint bands.
			for _, ep := range []string{"actor_get", "auth_login", "auth_register", "document_upload"} {
				if e, ok := env.Endpoints[ep]; !ok || e.P95.N != len(tt.files) || e.Share <= 0 {
					t.Errorf("endpoint %s = %+v", ep, e)
				}
			}
			if env.Provenance.Sources[0].SHA256 == "" || env.Provenance.Workload.VUs != 50 {
				t.Errorf("provenance = %+v", env.Provenance)
			}
		})
	}
}

// `k6 inspect` run without the runs' -e DURATION=6m reports the script's
// default 1m30s: the envelope must keep the measured 6m1s (compare would
// otherwise refuse the baseline's own runs) and say why; an options file
// that agrees with the runs is taken as is.
func TestOptionsDurationAgainstRuns(t *testing.T) {
	in, err := figures.ReadFiles([]string{
		fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-a.summary.json"),
		fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-b.summary.json"),
		fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-c.summary.json"),
	}, figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, optDuration, want, warning string
	}{
		{"default of an un-parameterised inspect", "1m30s", "6m1s", "--k6-options gives a duration of 1m30s but the runs lasted 6m1s"},
		{"inspect with the runs' values", "6m0s", "6m0s", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := ReadK6Options(fixtures.Path(t, "k6/baseline-mix-v2.2.0/script.k6-inspect.json"))
			if err != nil {
				t.Fatal(err)
			}
			w.Duration = tt.optDuration
			env, err := Compute(in, Options{Workload: w})
			if err != nil {
				t.Fatal(err)
			}
			if got := env.Provenance.Workload.Duration; got != tt.want {
				t.Errorf("workload.duration = %s, want %s", got, tt.want)
			}
			warnings := strings.Join(env.Warnings, "\n")
			if tt.warning == "" && strings.Contains(warnings, "--k6-options") || !strings.Contains(warnings, tt.warning) {
				t.Errorf("warnings %q, want %q", env.Warnings, tt.warning)
			}
		})
	}
}

// Clean real runs show no sign of saturation: every window of five
// consecutive clean one-minute history runs (01–10), all ten together,
// and the three six-minute baseline runs, read from their points so
// that each run's halves are tested.
func TestNoSaturationOnCleanRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("reads thirteen point streams")
	}
	var history []figures.Run
	for i := 1; i <= 10; i++ {
		rs, err := figures.ReadFiles([]string{fixtures.Path(t, fmt.Sprintf("k6/history-v2.2.0/run-%02d.ndjson.gz", i))}, figures.LoadOptions(0, ""))
		if err != nil {
			t.Fatal(err)
		}
		history = append(history, rs...)
	}
	six, err := figures.ReadFiles(fixtures.Baselines(t), figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string][]figures.Run{"history runs 01-10": history, "six-minute baselines": six}
	for i := 0; i+5 <= len(history); i++ {
		sets[fmt.Sprintf("history runs %02d-%02d", i+1, i+5)] = history[i : i+5]
	}
	for name, runs := range sets {
		for _, r := range runs {
			if r.Halves == nil || r.Halves.P95LogSE[0] == 0 || r.Halves.Counted[0] == 0 {
				t.Fatalf("%s: %s has no halves to test: %+v", name, r.Source, r.Halves)
			}
		}
		env, err := Compute(runs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		reasons := strings.Join(env.Saturation.Reasons, "\n")
		if env.Saturation.Verdict != "below saturation" || !strings.Contains(reasons, "no drift within runs") {
			t.Errorf("%s: %s\n%s", name, env.Saturation.Verdict, reasons)
		}
		t.Logf("%s: %s", name, reasons)
	}
}
