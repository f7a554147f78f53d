package figures

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
)

func TestSourceName(t *testing.T) {
	wd, _ := os.Getwd()
	tests := map[string]string{
		"runs/a.json":                      "runs/a.json",
		"./runs/../b.json":                 "b.json",
		filepath.Join(wd, "x", "c.json"):   "x/c.json",
		filepath.Join(os.TempDir(), "d.j"): "d.j",
	}
	for in, want := range tests {
		if got := SourceName(in); got != want {
			t.Errorf("SourceName(%q) = %q, want %q", in, got, want)
		}
	}
}

// summaryRun is a summary file's run with the metrics given.
func summaryRun(ms map[string]*k6.Metric) *k6.Run {
	return &k6.Run{Source: "b.json", Format: k6.FormatSummaryExport, Mode: k6.ModeSummary, Metrics: ms, Duration: time.Minute}
}

func TestReadErrors(t *testing.T) {
	reqs := &k6.Metric{Name: "http_reqs", Parent: "http_reqs", Type: k6.Counter, Values: map[string]float64{"rate": 1}}
	tests := []struct {
		name string
		run  *k6.Run
		want string
	}{
		{"no http_reqs", summaryRun(map[string]*k6.Metric{}), "b.json: no http_reqs metric"},
		{"no count", summaryRun(map[string]*k6.Metric{"http_reqs": reqs}), "b.json: metric http_reqs: field count is missing"},
	}
	for _, tt := range tests {
		if _, err := Read(tt.run, Source{File: "b.json"}, ReadOptions{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// ndjson is a point stream of one run: Metric lines, then a Point line
// for each sample, one a second from t0.
func ndjson(samples []sample) string {
	var b strings.Builder
	defs := map[string]string{"http_reqs": "counter", "http_req_duration": "trend", "vus": "gauge"}
	for _, s := range samples {
		if _, ok := defs[s.metric]; !ok {
			defs[s.metric] = "trend"
		}
	}
	for _, m := range slices.Sorted(func(yield func(string) bool) {
		for k := range defs {
			if !yield(k) {
				return
			}
		}
	}) {
		contains := "default"
		if defs[m] == "trend" {
			contains = "time"
		}
		fmt.Fprintf(&b, `{"type":"Metric","data":{"name":%q,"type":%q,"contains":%q,"thresholds":[],"submetrics":null},"metric":%q}`+"\n", m, defs[m], contains, m)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range samples {
		tags := ""
		for k, v := range s.tags {
			tags += fmt.Sprintf(",%q:%q", k, v)
		}
		ts := t0.Add(time.Duration(i) * time.Second)
		if s.at > 0 {
			ts = t0.Add(s.at)
		}
		fmt.Fprintf(&b, `{"metric":%q,"type":"Point","data":{"time":%q,"value":%v,"tags":{"testid":"t1"%s}}}`+"\n", s.metric, ts.Format(time.RFC3339Nano), s.value, tags)
	}
	return b.String()
}

type sample struct {
	metric string
	value  float64
	tags   map[string]string
	at     time.Duration // from the run's first second; 0 = the sample's index in seconds
}

// requests are samples of requests of one endpoint: an http_reqs and an
// http_req_duration sample tagged name=endpoint each, and the endpoint's
// custom trend sample when trend is set.
func requests(endpoint string, trend []float64, durations ...float64) []sample {
	var out []sample
	tags := map[string]string{"name": endpoint}
	for i, d := range durations {
		out = append(out, sample{metric: "http_reqs", value: 1, tags: tags}, sample{metric: "http_req_duration", value: d, tags: tags})
		if i < len(trend) {
			out = append(out, sample{metric: endpoint, value: trend[i]})
		}
	}
	return out
}

func readNDJSON(t *testing.T, text string, groupBy string) Run {
	t.Helper()
	r, err := ReadRun("run.ndjson", strings.NewReader(text), LoadOptions(0, groupBy))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A --group-by value whose http_req_duration samples are exactly a
// custom trend's (in any order) is one endpoint, listed once, under the
// trend; a value whose samples differ stays its own.
func TestGroupDuplicatingTrend(t *testing.T) {
	tests := []struct {
		name       string
		login      []float64
		loginTrend []float64
		want       []string
	}{
		{"same samples", []float64{300, 100}, []float64{100, 300}, []string{"auth_login", "name=home"}},
		{"one sample differs", []float64{300, 100}, []float64{100, 301}, []string{"auth_login", "name=auth_login", "name=home"}},
		{"a subset is not the same", []float64{300, 100}, []float64{100}, []string{"auth_login", "name=auth_login", "name=home"}},
	}
	for _, tt := range tests {
		samples := requests("auth_login", tt.loginTrend, tt.login...)
		samples = append(samples, requests("home", nil, 3, 1, 2)...)
		r := readNDJSON(t, ndjson(samples), "name")
		if got := r.EndpointKeys(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: endpoints %q, want %q", tt.name, got, tt.want)
		}
	}
}

// A point stream cut by --skip-warmup next to a whole-run summary differs
// in duration; the difference says why, so the user knows the window is
// the cause and not the runs.
func TestWorkloadDiffsMixedKinds(t *testing.T) {
	run := func(name string, summary bool, d time.Duration) *Run {
		return &Run{Source: name, DurationSeconds: d.Seconds(), Workload: Workload{Summary: summary}}
	}
	for _, tc := range []struct {
		name     string
		a, b     *Run
		wantHint bool
	}{
		{"stream vs summary", run("a", false, 3*time.Minute), run("b", true, 6*time.Minute), true},
		{"two summaries", run("a", true, 3*time.Minute), run("b", true, 6*time.Minute), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			joined := strings.Join(WorkloadDiffs(tc.a, tc.b), "\n")
			if !strings.Contains(joined, "duration: a ran 3m0s, b ran 6m0s") {
				t.Fatalf("no duration difference named: %q", joined)
			}
			if got := strings.Contains(joined, "--skip-warmup"); got != tc.wantHint {
				t.Errorf("hint present = %v, want %v: %q", got, tc.wantHint, joined)
			}
		})
	}
}

// Two runs are one workload when their VUs, scenarios and metric sets
// agree and their whole durations lie within SameDuration of each other.
func TestWorkloadDiffs(t *testing.T) {
	base := Run{Source: "a", DurationSeconds: 360, Workload: Workload{VUs: 50, Scenarios: []string{"mix"}, Metrics: []string{"http_reqs", "vus"}}}
	tests := []struct {
		name string
		edit func(*Run)
		want string // "" for none
	}{
		{"same", func(*Run) {}, ""},
		{"VUs", func(r *Run) { r.Workload.VUs = 100 }, "VUs: a has 50, b has 100"},
		{"VUs unknown", func(r *Run) { r.Workload.VUs = 0 }, ""},
		{"scenarios", func(r *Run) { r.Workload.Scenarios = []string{"other"} }, "scenarios: a has [mix], b has [other]"},
		{"metric set", func(r *Run) { r.Workload.Metrics = []string{"http_reqs", "iterations", "vus"} }, "metric set: b has iterations that a lacks"},
		{"9% shorter", func(r *Run) { r.DurationSeconds = 360 * 0.91 }, ""},
		{"11% shorter", func(r *Run) { r.DurationSeconds = 360 * 0.89 }, "duration: a ran 6m0s, b ran 5m20s"},
		{"warm-up cut counts back", func(r *Run) { r.DurationSeconds, r.Workload.Skipped = 300, time.Minute }, ""},
	}
	for _, tt := range tests {
		b := base
		b.Source = "b"
		b.Workload.Scenarios = slices.Clone(base.Workload.Scenarios)
		tt.edit(&b)
		got := strings.Join(WorkloadDiffs(&base, &b), "\n")
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: diffs %q, want %q", tt.name, got, tt.want)
		}
	}
}
