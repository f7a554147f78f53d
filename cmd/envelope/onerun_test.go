package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
)

// A run means one thing in every command: on every real fixture run of
// the baseline-mix workload, in the point stream and the summary k6
// wrote of it, summarize, baseline, history record (read back by history
// list and show), compare and the envelope report give the same
// duration, VUs, request rate and figures, and judge it the same
// workload as the runs it was recorded with; and a point stream's
// request rate is k6's own (the summary's) within 0.06%.
func TestOneRunEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 69 real runs through five commands")
	}
	groups := []struct {
		name  string
		files []string
	}{
		{"history ndjson", fixtures.Glob(t, "k6/history-v2.2.0/run-*.ndjson.gz")},
		{"history summaries", fixtures.Glob(t, "k6/history-v2.2.0/run-*.summary.json")},
		{"baselines ndjson", append(fixtures.Glob(t, "k6/baseline-mix-v2.2.0/baseline-?.ndjson.gz"),
			fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz"))},
		{"baselines summaries", fixtures.Glob(t, "k6/baseline-mix-v2.2.0/baseline-?.summary.json")},
		// One run in both files: a point stream and a summary are one workload.
		{"one run, both files", []string{fixtures.Path(t, "k6/baseline-mix-v2.2.0/otlp-grpc-exponential.ndjson.gz"),
			fixtures.Path(t, "k6/baseline-mix-v2.2.0/otlp-grpc-exponential.summary.json")}},
	}
	checked, rated := 0, 0
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			dir := t.TempDir()
			envPath := filepath.Join(dir, "envelope.json")
			mustRun(t, append([]string{"baseline", "--format", "json", "--out", envPath}, g.files...)...)
			env, err := envelope.ReadFile(envPath)
			if err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(dir, "history.db")
			for i, f := range g.files {
				mustRun(t, "history", "--history", db, "--test", "one", "record", "--commit", fmt.Sprintf("c%02d", i+1),
					"--time", fmt.Sprintf("2026-01-01 00:%02d:00", i+1), f)
			}
			listed := historyList(t, db)
			shown := map[figures.Key][]float64{}
			for _, k := range []string{"rps", "median", "p95", "p99", "error_rate", "auth_login.p95", "document_upload.median"} {
				key, err := figures.ParseKey(k)
				if err != nil {
					t.Fatal(err)
				}
				shown[key] = historyShow(t, db, k)
			}
			mdPath := filepath.Join(dir, "report.md")
			mustRun(t, "report", "--envelope", envPath, "--out", mdPath)
			md, err := os.ReadFile(mdPath)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range g.files {
				run := env.Runs[i].Run
				sum := summarizeRun(t, f)
				rate := sum.Metrics["http_reqs"].Values["rate"]
				// One duration, one rate, one VU count.
				if figures.Round(sum.DurationS) != run.DurationSeconds || figures.Round(rate) != run.RPS {
					t.Errorf("%s: summarize %vs at %v req/s, baseline %vs at %v req/s", f, sum.DurationS, rate, run.DurationSeconds, run.RPS)
				}
				if vus := int(sum.Metrics["vus_max"].Values["max"]); vus != env.Provenance.Workload.VUs || listed[i].VUs != vus {
					t.Errorf("%s: summarize %d VUs, baseline %d, history %d", f, vus, env.Provenance.Workload.VUs, listed[i].VUs)
				}
				if listed[i].DurationS != run.DurationSeconds {
					t.Errorf("%s: history %vs, baseline %vs", f, listed[i].DurationS, run.DurationSeconds)
				}
				// The figures a history records are the envelope's.
				for k, vals := range shown {
					want, ok := run.Value(k)
					if !ok || vals[i] != want.X {
						t.Errorf("%s %s: history %v, baseline %v", f, k, vals[i], want.X)
					}
				}
				// compare takes the run for the workload of the runs it was
				// recorded with, and reads the same figures.
				res := compareOne(t, envPath, f)
				for _, fig := range res.Figures {
					want, ok := run.Value(fig.Key())
					if !ok || fig.Verdict == compare.NoData || fig.Key().Figure == figures.ErrorRate {
						continue
					}
					if math.Abs(fig.Candidate/want.X-1) > 1e-12 {
						t.Errorf("%s %s: compare's candidate %v, baseline %v", f, fig.Key(), fig.Candidate, want.X)
					}
				}
				// The report's table of runs states them.
				row := fmt.Sprintf(" | %.1f s | %s |", run.DurationSeconds, figures.Thousands(run.Requests))
				if !strings.Contains(string(md), row) {
					t.Errorf("%s: the report has no run row with %q", f, row)
				}
				// A point stream's rate is k6's, where k6's summary of the
				// run is there to say it.
				if sumFile := strings.TrimSuffix(f, ".ndjson.gz") + ".summary.json"; sumFile != f {
					if k6sum, err := k6.Load(sumFile, k6.LoadOptions{}); err == nil {
						if want := k6sum.Metrics["http_reqs"].Values["rate"]; math.Abs(rate/want-1) > 0.0006 {
							t.Errorf("%s: http_reqs rate %v, k6's %v", f, rate, want)
						}
						rated++
					}
				}
				checked++
			}
		})
	}
	if checked != 69 || rated != 34 {
		t.Errorf("%d runs checked, want 69; %d point streams' rates, want 34", checked, rated)
	}
}

type listedRun struct {
	DurationS float64 `json:"duration_s"`
	VUs       int     `json:"vus"`
}

func historyList(t *testing.T, db string) []listedRun {
	t.Helper()
	var out []listedRun
	if err := json.Unmarshal([]byte(mustRun(t, "history", "--history", db, "list", "--format", "json")), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func historyShow(t *testing.T, db, figure string) []float64 {
	t.Helper()
	var s seriesJSON
	if err := json.Unmarshal([]byte(mustRun(t, "history", "--history", db, "show", "--figure", figure, "--format", "json")), &s); err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(s.Runs))
	for i, r := range s.Runs {
		out[i] = r.Value
	}
	return out
}

type summarizedRun struct {
	DurationS float64 `json:"duration_s"`
	Metrics   map[string]struct {
		Values map[string]float64 `json:"values"`
	} `json:"metrics"`
}

func summarizeRun(t *testing.T, file string) summarizedRun {
	t.Helper()
	var out struct {
		Runs []summarizedRun `json:"runs"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "summarize", "--format", "json", file)), &out); err != nil {
		t.Fatal(err)
	}
	return out.Runs[0]
}

func compareOne(t *testing.T, envPath, file string) compare.Result {
	t.Helper()
	code, so, se := cmdlinetest.Capture(runCLI, "compare", "--envelope", envPath, "--format", "json", file)
	if code != 0 && code != 1 {
		t.Fatalf("compare %s: exit %d: %s", file, code, se)
	}
	var res compare.Result
	if err := json.Unmarshal([]byte(so), &res); err != nil {
		t.Fatalf("%v\n%s", err, so)
	}
	return res
}
