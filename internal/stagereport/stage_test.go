package stagereport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/k6options"
)

var update = flag.Bool("update", false, "rewrite golden files")

// benchEndpoint describes one synthetic endpoint: a latency distribution
// (lognormal around median with spread sigma), a constant batch size and
// a share of 500 responses.
type benchEndpoint struct {
	name    string
	median  float64
	sigma   float64
	batch   float64
	errEach int // every errEach-th request fails with 500; 0 = never
}

var benchEndpoints = []benchEndpoint{
	{"steady", 280, 0.10, 1.52, 0},
	{"adaptive", 200, 0.12, 1.18, 0},
	{"target-aware", 340, 0.20, 2.22, 0},
	{"standard", 160, 0.10, 1.00, 0},
}

// benchPoints generates a run like the benchmark report's (four endpoints, three stages): each endpoint is
// hit at the stage target rate (5m:1, 5m:10, 5m:50 scaled to seconds by
// scale), with http_req_duration, http_reqs, http_req_failed and a
// batch_size trend per request. Deterministic.
func benchPoints(eps []benchEndpoint, scale time.Duration) ([]k6.Point, time.Time) {
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	rates := []float64{1, 10, 50}
	var pts []k6.Point
	for s, rate := range rates {
		n := int(rate * scale.Seconds())
		for i := 0; i < n; i++ {
			at := start.Add(time.Duration(s)*scale + time.Duration(float64(i)/float64(n)*float64(scale)))
			for k, ep := range eps {
				status := "200"
				failed := 0.0
				if ep.errEach > 0 && (i+k)%ep.errEach == 0 {
					status, failed = "500", 1
				}
				tags := map[string]string{"name": ep.name, "status": status, "method": "GET"}
				lat := ep.median * math.Exp(ep.sigma*rng.NormFloat64())
				pts = append(pts,
					k6.Point{Metric: "http_req_duration", Time: at, Value: lat, Tags: tags},
					k6.Point{Metric: "http_reqs", Time: at, Value: 1, Tags: tags},
					k6.Point{Metric: "http_req_failed", Time: at, Value: failed, Tags: tags},
					k6.Point{Metric: "batch_size", Time: at, Value: ep.batch, Tags: tags},
				)
			}
		}
	}
	return pts, start
}

func stagesScenario(t *testing.T, spec string) *k6options.Scenario {
	t.Helper()
	sc, err := k6options.ParseStages(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// refPercentile is written independently of the package: sort, then
// interpolate at rank p(n-1), as k6 does.
func refPercentile(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	r := p * float64(len(s)-1)
	i := int(r)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (s[i+1]-s[i])*(r-float64(i))
}

func TestStagePercentileByHand(t *testing.T) {
	// 1..5: rank 0.95·4 = 3.8 -> 4.8; 0.99·4 = 3.96 -> 4.96; median 3.
	st := stageStats([]float64{5, 3, 1, 4, 2})
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"avg", *st.Avg, 3}, {"p50", *st.P50, 3}, {"p95", *st.P95, 4.8}, {"p99", *st.P99, 4.96}, {"max", *st.Max, 5}} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if one := stageStats([]float64{7}); *one.P95 != 7 || *one.P99 != 7 {
		t.Errorf("one sample: %+v", one)
	}
	if none := stageStats(nil); none.Samples != 0 || none.Avg != nil {
		t.Errorf("no samples: %+v", none)
	}
}

func TestStageReportBenchmarkLike(t *testing.T) {
	scale := 20 * time.Second // 5m stages shrunk to 20s keep the test fast
	pts, start := benchPoints(benchEndpoints, scale)
	sc := stagesScenario(t, "20s:1,20s:10,20s:50")
	r, err := BuildStageReport(pts, StageConfig{Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Start.Equal(start) {
		t.Errorf("start %v, want the earliest sample %v", r.Start, start)
	}
	if len(r.Endpoints) != 4 || r.Endpoints[0].Name != "steady" || r.Endpoints[3].Name != "standard" {
		t.Fatalf("endpoints %v", r.Endpoints)
	}
	// Independent per-stage grouping of the same points.
	for _, e := range r.Endpoints {
		byStage := make([][]float64, 3)
		var all []float64
		for _, p := range pts {
			if p.Metric != "http_req_duration" || p.Tags["name"] != e.Name {
				continue
			}
			all = append(all, p.Value)
			s := int(p.Time.Sub(start) / scale)
			byStage[s] = append(byStage[s], p.Value)
		}
		if got, want := e.P95, refPercentile(all, 0.95); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s p95 %v, want %v", e.Name, got, want)
		}
		if e.Requests != int64(len(all)) {
			t.Errorf("%s requests %d, want %d", e.Name, e.Requests, len(all))
		}
		for s, st := range e.Stages {
			xs := byStage[s]
			if st.Samples != len(xs) {
				t.Fatalf("%s stage %d samples %d, want %d", e.Name, s+1, st.Samples, len(xs))
			}
			var sum, max float64
			for _, x := range xs {
				sum += x
				max = math.Max(max, x)
			}
			for _, c := range []struct {
				what      string
				got, want float64
			}{
				{"avg", *st.Avg, sum / float64(len(xs))},
				{"p50", *st.P50, refPercentile(xs, 0.5)},
				{"p95", *st.P95, refPercentile(xs, 0.95)},
				{"p99", *st.P99, refPercentile(xs, 0.99)},
				{"max", *st.Max, max},
			} {
				if math.Abs(c.got-c.want) > 1e-9 {
					t.Errorf("%s stage %d %s = %v, want %v", e.Name, s+1, c.what, c.got, c.want)
				}
			}
		}
	}
	// Cost: standard has the smallest batch, so it is the baseline, and
	// cost is 100 × 1.00 / batch.
	if r.Baseline != "standard" {
		t.Errorf("baseline %q", r.Baseline)
	}
	for i, e := range r.Endpoints {
		want := 100 * 1.0 / benchEndpoints[i].batch
		if e.CostPct == nil || math.Abs(*e.CostPct-want) > 1e-9 {
			t.Errorf("%s cost %v, want %v", e.Name, e.CostPct, want)
		}
	}
	if got := []string{r.Ranking[0].Name, r.Ranking[3].Name}; got[0] != "standard" || got[1] != "target-aware" {
		t.Errorf("ranking ends %v", got)
	}
	wantFindings := []string{
		"Fastest p95 endpoint: **standard**",
		"Most cost-efficient endpoint (estimate): **target-aware** at **45.05%** of standard baseline.",
		"Lowest observed error rate is a tie at **0.000%** across: **steady, adaptive, target-aware, standard**.",
	}
	for i, w := range wantFindings {
		if i >= len(r.Findings) || !strings.HasPrefix(r.Findings[i], w) {
			t.Errorf("finding %d = %q, want prefix %q", i, r.Findings, w)
		}
	}
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/stage-report.golden.md", md.Bytes())
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	// The minimum JSON shape consumers read.
	var shape struct {
		Endpoints map[string]struct {
			P95            *float64 `json:"p95"`
			ErrorRate      *float64 `json:"error_rate"`
			Requests       *int64   `json:"requests"`
			EffectiveBatch *float64 `json:"effective_batch"`
			CostPct        *float64 `json:"cost_pct"`
			Stages         []map[string]*float64
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(js.Bytes(), &shape); err != nil {
		t.Fatal(err)
	}
	ta := shape.Endpoints["target-aware"]
	if ta.P95 == nil || ta.ErrorRate == nil || ta.Requests == nil || ta.EffectiveBatch == nil || ta.CostPct == nil || len(ta.Stages) != 3 {
		t.Fatalf("json shape %+v", ta)
	}
	for _, k := range []string{"samples", "avg", "p50", "p95", "p99", "max"} {
		if ta.Stages[2][k] == nil {
			t.Errorf("stage 3 lacks %s", k)
		}
	}
}

func TestStageReportBadInput(t *testing.T) {
	scale := 10 * time.Second
	eps := []benchEndpoint{{"a", 100, 0.1, 1, 0}, {"b", 120, 0.1, 2, 4}}
	pts, _ := benchPoints(eps, scale)
	for _, tc := range []struct {
		name   string
		cfg    StageConfig
		points []k6.Point
		err    string // "" = no error
		check  func(t *testing.T, r *StageReport)
	}{
		{name: "baseline endpoint missing", cfg: StageConfig{Scenario: stagesScenario(t, "10s:1,10s:10,10s:50"), Baseline: "c"},
			err: `baseline endpoint "c" does not exist; endpoints (tag name): a, b`},
		{name: "windows far from the run", cfg: StageConfig{Scenario: stagesScenario(t, "1s:1,1s:2")},
			err: "do not cover the run"},
		{name: "no windows", cfg: StageConfig{}, err: "no stage windows"},
		{name: "no points", cfg: StageConfig{Scenario: stagesScenario(t, "1s:1")}, points: []k6.Point{}, err: "no samples"},
		{name: "a stage without samples", cfg: StageConfig{Scenario: stagesScenario(t, "10s:1,10s:10,10s:50,10s:50")},
			check: func(t *testing.T, r *StageReport) {
				st := r.Endpoints[0].Stages[3]
				if st.Samples != 0 || st.Avg != nil || st.P95 != nil {
					t.Errorf("empty stage shown as %+v", st)
				}
				var md, js bytes.Buffer
				_ = r.WriteMarkdown(&md)
				_ = r.WriteJSON(&js)
				if !strings.Contains(md.String(), "| 4 | 50 | 30-40 | 0 | _no samples_ |") {
					t.Errorf("markdown does not show the empty stage:\n%s", md.String())
				}
				if !strings.Contains(js.String(), `"samples": 0,`) || !strings.Contains(js.String(), `"avg": null`) {
					t.Errorf("json does not show the empty stage as null")
				}
				if !containsAny(r.Warnings, "endpoint a has no status-200 samples in stage 4 (30-40)") ||
					!containsAny(r.Warnings, "stage 4 (30-40) starts after the last sample") {
					t.Errorf("warnings %q", r.Warnings)
				}
			}},
		{name: "errors and no tie", cfg: StageConfig{Scenario: stagesScenario(t, "10s:1,10s:10,10s:50")},
			check: func(t *testing.T, r *StageReport) {
				// b fails every 4th request.
				if math.Abs(r.Endpoints[1].ErrorRate-0.25) > 0.01 || r.Endpoints[0].ErrorRate != 0 {
					t.Errorf("error rates %v %v", r.Endpoints[0].ErrorRate, r.Endpoints[1].ErrorRate)
				}
				if !containsAny(r.Findings, "Lowest observed error rate: **a** at **0.000%**.") {
					t.Errorf("findings %q", r.Findings)
				}
			}},
		{name: "no batch metric leaves cost out", cfg: StageConfig{Scenario: stagesScenario(t, "10s:1,10s:10,10s:50"), BatchMetric: "nope"},
			check: func(t *testing.T, r *StageReport) {
				if r.Baseline != "" || r.Endpoints[0].CostPct != nil {
					t.Errorf("cost invented: %q %v", r.Baseline, r.Endpoints[0].CostPct)
				}
				var md, js bytes.Buffer
				_ = r.WriteMarkdown(&md)
				_ = r.WriteJSON(&js)
				if strings.Contains(md.String(), "Cost (") || strings.Contains(js.String(), "cost_pct") {
					t.Error("cost column present without batch sizes")
				}
				if !containsAny(r.Warnings, "no batch sizes found (metric nope)") {
					t.Errorf("warnings %q", r.Warnings)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pts
			if tc.points != nil {
				p = tc.points
			}
			r, err := BuildStageReport(p, tc.cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r)
		})
	}
}

// runAReport is the stage report of the real k6 v2.2.0 run under its
// arrival scenario's windows.
func runAReport(t *testing.T) (*StageReport, []k6.Point) {
	t.Helper()
	pts := readNDJSON(t, fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	o, err := k6options.Load(fixtures.Path(t, "k6/generated-v2.2.0/script.k6-inspect.json"))
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := o.Scenario("")
	r, err := BuildStageReport(pts, StageConfig{Scenario: sc, OnlyScenario: sc.Name})
	if err != nil {
		t.Fatal(err)
	}
	return r, pts
}

// The real k6 v2.2.0 run: endpoints "home" (200) and "missing" (404)
// plus the closed scenario's URL-named requests, under the arrival
// scenario's windows 0-3s, 3-5s, 5-7s.
func TestStageReportRealFixture(t *testing.T) {
	r, pts := runAReport(t)
	// The closed scenario's URL-named requests are not the arrival
	// scenario's endpoints.
	if len(r.Endpoints) != 2 {
		t.Errorf("endpoints %d, want home and missing only", len(r.Endpoints))
	}
	byName := map[string]*EndpointStats{}
	for _, e := range r.Endpoints {
		byName[e.Name] = e
	}
	home, missing := byName["home"], byName["missing"]
	if home == nil || missing == nil {
		t.Fatalf("endpoints %v", r.Endpoints)
	}
	// Independent count of home's status-200 samples per window.
	start := pts[0].Time
	for _, p := range pts {
		if p.Time.Before(start) {
			start = p.Time
		}
	}
	counts := make([]int, 3)
	for _, p := range pts {
		if p.Metric == "http_req_duration" && p.Tags["name"] == "home" && p.Tags["status"] == "200" && p.Tags["scenario"] == "arrival" {
			off := p.Time.Sub(start)
			for i, w := range r.Windows {
				if off >= w.Start && off < w.End {
					counts[i]++
				}
			}
		}
	}
	for i, st := range home.Stages {
		if st.Samples != counts[i] || st.Samples == 0 {
			t.Errorf("home stage %d samples %d, want %d (non-zero)", i+1, st.Samples, counts[i])
		}
	}
	// Every /missing request is a 404: error rate 1, no status-200 stage samples.
	if missing.ErrorRate != 1 || missing.Stages[0].Samples != 0 || home.ErrorRate != 0 {
		t.Errorf("missing error rate %v, stage samples %d; home error rate %v", missing.ErrorRate, missing.Stages[0].Samples, home.ErrorRate)
	}
	if r.Baseline != "" {
		t.Error("the fixture has no batch sizes, yet a cost baseline was chosen")
	}
	if !containsAny(r.Findings, "Fastest p95 endpoint") {
		t.Errorf("findings %q", r.Findings)
	}
}

// readNDJSON decodes k6 --out json Point lines with encoding/json, so the
// fixture test does not depend on the k6 package's loader.
func readNDJSON(t *testing.T, path string) []k6.Point {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // only read
	var pts []k6.Point
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Type   string `json:"type"`
			Metric string `json:"metric"`
			Data   struct {
				Time  time.Time         `json:"time"`
				Value float64           `json:"value"`
				Tags  map[string]string `json:"tags"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Type == "Point" {
			pts = append(pts, k6.Point{Metric: line.Metric, Time: line.Data.Time, Value: line.Data.Value, Tags: line.Data.Tags})
		}
	}
	return pts
}

func containsAny(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking):\n%s", path, got)
	}
}

func TestWriteStageReportChart(t *testing.T) {
	pts, _ := benchPoints(benchEndpoints, 10*time.Second)
	r, err := BuildStageReport(pts, StageConfig{Scenario: stagesScenario(t, "10s:1,10s:10,10s:50")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.LatencyChart()
	if err != nil {
		t.Fatal(err)
	}
	// standard's box sits below steady's: medians 160 vs 280 ms.
	if len(c.Boxes) != 4 || !(c.Boxes[3].Median < c.Boxes[0].Median) || !(c.Boxes[0].Q1 <= c.Boxes[0].Median && c.Boxes[0].Median <= c.Boxes[0].Q3) {
		t.Errorf("boxes %+v", c.Boxes)
	}
	// Every tick label of the chart reads as the value at its tick's
	// position, in both themes.
	if err := chart.CheckThemedTicks(c); err != nil {
		t.Error(err)
	}
	dir := t.TempDir()
	md := dir + "/report.md"
	if err := WriteStageReport(r, md); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{chartPaths.Light, chartPaths.Dark} {
		b, err := os.ReadFile(dir + "/" + p)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: %v", p, err)
		}
	}
	b, _ := os.ReadFile(md)
	if !strings.Contains(string(b), `srcset="charts/dark/latency-distribution.png"`) {
		t.Error("markdown lacks the picture element")
	}
}

// BenchmarkBuildStageReport: a benchmark-report-sized run, four endpoints at
// 5m:1,5m:10,5m:50 (10,800 requests each, 172,800 points).
func BenchmarkBuildStageReport(b *testing.B) {
	pts, _ := benchPoints(benchEndpoints, 5*time.Minute)
	sc, _ := k6options.ParseStages("5m:1,5m:10,5m:50", "")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := BuildStageReport(pts, StageConfig{Scenario: sc}); err != nil {
			b.Fatal(err)
		}
	}
}

// The project's loader must hand over the same points as the test's own
// decoder, so the CLI's stage report equals the one checked above.
func TestStageReportViaLoader(t *testing.T) {
	run, err := k6.Load(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"), k6.LoadOptions{KeepPoints: true})
	if err != nil {
		t.Fatal(err)
	}
	o, _ := k6options.Load(fixtures.Path(t, "k6/generated-v2.2.0/script.k6-inspect.json"))
	sc, _ := o.Scenario("")
	cfg := StageConfig{Scenario: sc, OnlyScenario: sc.Name}
	a, err := BuildStageReport(run.Points, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildStageReport(readNDJSON(t, fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ja, jb bytes.Buffer
	_ = a.WriteJSON(&ja)
	_ = b.WriteJSON(&jb)
	if ja.String() != jb.String() {
		t.Errorf("loader and decoder disagree:\n%s\n%s", ja.String(), jb.String())
	}
}
