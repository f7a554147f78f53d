package stagereport

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/k6options"
)

// The per-endpoint workload: one ramping-arrival-rate scenario per
// endpoint, each with the same three stages (0→2→10→30 iterations/s over
// 1m each: 1,620 requests per endpoint), each request tagged with its
// endpoint's name.
var perEndpointScenarios = []struct {
	name    string
	median  float64 // ms
	sigma   float64
	batch   float64
	errEach int // every errEach-th request answers 503; 0 = never
}{
	{"steady", 280, 0.10, 1.52, 0},
	{"adaptive", 200, 0.12, 1.18, 0},
	{"target-aware", 340, 0.20, 2.22, 0},
	{"standard", 160, 0.10, 1.00, 250},
}

var perEndpointStages = []struct {
	d      time.Duration
	target float64
}{{time.Minute, 2}, {time.Minute, 10}, {time.Minute, 30}}

const (
	perEndpointInspect    = "testdata/per-endpoint.k6-inspect.json"
	perEndpointSequential = "testdata/per-endpoint-sequential.k6-inspect.json"
	perEndpointRun        = "testdata/per-endpoint.ndjson.gz"
	perEndpointParams     = "testdata/per-endpoint.params.yaml"
)

// perEndpointInspectJSON is the options as `k6 inspect` prints them for
// such a script: scenarios keyed by name (k6 prints them sorted), each
// starting at startTimes[name] (absent: in parallel at 0).
func perEndpointInspectJSON(t testing.TB, startTimes map[string]time.Duration) []byte {
	t.Helper()
	b, err := os.ReadFile(fixtures.Path(t, "k6/generated-v2.2.0/script.k6-inspect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	scen := map[string]any{}
	for _, sc := range perEndpointScenarios {
		var stages []map[string]any
		for _, st := range perEndpointStages {
			stages = append(stages, map[string]any{"duration": st.d.String(), "target": st.target})
		}
		var start any
		if d, ok := startTimes[sc.name]; ok {
			start = d.String()
		}
		scen[sc.name] = map[string]any{
			"executor": "ramping-arrival-rate", "startTime": start, "gracefulStop": nil, "env": nil,
			"exec": "hit", "tags": map[string]string{"endpoint": sc.name},
			"startRate": 0, "timeUnit": "1s", "stages": stages, "preAllocatedVUs": 20, "maxVUs": 40,
		}
	}
	doc["scenarios"] = scen
	doc["thresholds"] = nil
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// perEndpointNDJSON writes the run as k6 --out json would: a Metric line
// before a metric's first point, then one http_reqs, http_req_duration,
// http_req_failed and batch_size point per request, in time order. Each
// scenario's iterations start where the integral of its ramping rate
// reaches the next whole iteration, as k6's arrival-rate executor starts
// them; the point time is the request's start.
func perEndpointNDJSON(startTimes map[string]time.Duration) []byte {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	type req struct {
		at      time.Time
		ep      int
		i       int
		latency float64
	}
	var reqs []req
	for e, sc := range perEndpointScenarios {
		rng := rand.New(rand.NewPCG(uint64(e+1), 16))
		at := t0.Add(startTimes[sc.name])
		from, n := 0.0, 0
		for _, st := range perEndpointStages {
			// N(t) = from·t + (to−from)·t²/(2D): solve N(t) = k for each
			// whole k the stage reaches.
			to, D := st.target, st.d.Seconds()
			a, b := (to-from)/(2*D), from
			total := from*D + (to-from)*D/2
			for k := 1.0; k <= total+1e-9; k++ {
				var ts float64
				if a == 0 {
					ts = k / b
				} else {
					ts = (-b + math.Sqrt(b*b+4*a*k)) / (2 * a)
				}
				lat := sc.median * math.Exp(sc.sigma*rng.NormFloat64())
				if rng.IntN(400) == 0 {
					lat *= 4 + 4*rng.Float64() // rare slow outliers
				}
				reqs = append(reqs, req{at.Add(time.Duration(ts * float64(time.Second))), e, n, lat})
				n++
			}
			at = at.Add(st.d)
			from = to
		}
	}
	// k6 samples the vus gauge every second from the test start; a
	// negative ep marks such a sample.
	var end time.Duration
	for _, sc := range perEndpointScenarios {
		var d time.Duration
		for _, st := range perEndpointStages {
			d += st.d
		}
		end = max(end, startTimes[sc.name]+d)
	}
	for s := time.Duration(0); s <= end; s += time.Second {
		reqs = append(reqs, req{at: t0.Add(s), ep: -1})
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].at.Before(reqs[j].at) })
	var buf bytes.Buffer
	defs := map[string]string{
		"http_reqs":         `{"name":"http_reqs","type":"counter","contains":"default","thresholds":[],"submetrics":null}`,
		"http_req_duration": `{"name":"http_req_duration","type":"trend","contains":"time","thresholds":[],"submetrics":null}`,
		"http_req_failed":   `{"name":"http_req_failed","type":"rate","contains":"default","thresholds":[],"submetrics":null}`,
		"batch_size":        `{"name":"batch_size","type":"trend","contains":"default","thresholds":[],"submetrics":null}`,
		"vus":               `{"name":"vus","type":"gauge","contains":"default","thresholds":[],"submetrics":null}`,
	}
	written := map[string]bool{}
	point := func(metric string, at time.Time, v float64, tags map[string]string) {
		if !written[metric] {
			written[metric] = true
			fmt.Fprintf(&buf, `{"type":"Metric","data":%s,"metric":%q}`+"\n", defs[metric], metric)
		}
		tb, _ := json.Marshal(tags)
		fmt.Fprintf(&buf, `{"metric":%q,"type":"Point","data":{"time":%q,"value":%s,"tags":%s}}`+"\n",
			metric, at.Format(time.RFC3339Nano), strconvG(v), tb)
	}
	for _, r := range reqs {
		if r.ep < 0 {
			point("vus", r.at, 20*float64(len(perEndpointScenarios)), map[string]string{})
			continue
		}
		sc := perEndpointScenarios[r.ep]
		status, failed, expected := "200", 0.0, "true"
		if sc.errEach > 0 && r.i%sc.errEach == sc.errEach-1 {
			status, failed, expected = "503", 1, "false"
		}
		tags := map[string]string{"expected_response": expected, "group": "", "method": "GET", "name": sc.name,
			"endpoint": sc.name, "proto": "HTTP/1.1", "scenario": sc.name, "status": status, "url": "http://127.0.0.1:18080/" + sc.name}
		point("http_reqs", r.at, 1, tags)
		point("http_req_duration", r.at, math.Round(r.latency*1e6)/1e6, tags)
		point("http_req_failed", r.at, failed, tags)
		point("batch_size", r.at, sc.batch, map[string]string{"group": "", "name": sc.name, "scenario": sc.name})
	}
	return buf.Bytes()
}

func strconvG(v float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestPerEndpointFixture keeps the committed fixture equal to what its
// generator writes (-update rewrites it).
func TestPerEndpointFixture(t *testing.T) {
	inspect := perEndpointInspectJSON(t, nil)
	seq := perEndpointInspectJSON(t, map[string]time.Duration{"steady": 0, "adaptive": 3 * time.Minute, "target-aware": 6 * time.Minute, "standard": 9 * time.Minute})
	run := perEndpointNDJSON(nil)
	if *update {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(run) // in memory, cannot fail
		_ = zw.Close()       // in memory, cannot fail
		for path, b := range map[string][]byte{perEndpointInspect: inspect, perEndpointSequential: seq, perEndpointRun: gz.Bytes()} {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for path, want := range map[string][]byte{perEndpointInspect: inspect, perEndpointSequential: seq} {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from its generator (run with -update after checking)", path)
		}
	}
	f, err := os.Open(perEndpointRun)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // only read
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, run) {
		t.Errorf("%s differs from its generator (run with -update after checking)", perEndpointRun)
	}
}

// indepStage is one row of a stage table computed without the package.
type indepStage struct {
	scenario                string
	startS, endS            float64
	samples                 int
	avg, p50, p95, p99, max float64
}

// independentStageTables windows a k6 NDJSON run from the raw JSON of a
// k6 inspect file: every status-200 http_req_duration sample goes to the
// stage of its own scenario (its scenario tag) whose window, measured
// from the earliest sample, holds it. Nothing of the package is used.
func independentStageTables(t *testing.T, inspectJSON []byte, ndjson io.Reader) map[string][]indepStage {
	t.Helper()
	var doc struct {
		Scenarios map[string]struct {
			StartTime *string `json:"startTime"`
			Stages    []struct {
				Duration string  `json:"duration"`
				Target   float64 `json:"target"`
			} `json:"stages"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(inspectJSON, &doc); err != nil {
		t.Fatal(err)
	}
	type win struct{ start, end float64 }
	wins := map[string][]win{}
	for name, sc := range doc.Scenarios {
		at := 0.0
		if sc.StartTime != nil {
			d, err := time.ParseDuration(*sc.StartTime)
			if err != nil {
				t.Fatal(err)
			}
			at = d.Seconds()
		}
		for _, st := range sc.Stages {
			d, err := time.ParseDuration(st.Duration)
			if err != nil {
				t.Fatal(err)
			}
			wins[name] = append(wins[name], win{at, at + d.Seconds()})
			at += d.Seconds()
		}
	}
	type sample struct {
		at             time.Time
		name, scenario string
		v              float64
	}
	var all []sample
	var first time.Time
	sc := bufio.NewScanner(ndjson)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Type, Metric string
			Data         struct {
				Time  time.Time
				Value float64
				Tags  map[string]string
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Type != "Point" {
			continue
		}
		if first.IsZero() || line.Data.Time.Before(first) {
			first = line.Data.Time
		}
		if line.Metric == "http_req_duration" && line.Data.Tags["status"] == "200" {
			all = append(all, sample{line.Data.Time, line.Data.Tags["name"], line.Data.Tags["scenario"], line.Data.Value})
		}
	}
	out := map[string][]indepStage{}
	type key struct {
		name string
		w    int
	}
	groups := map[key][]float64{}
	for _, s := range all {
		off := float64(s.at.Sub(first)) / 1e9
		for i, w := range wins[s.scenario] {
			if off >= w.start && off < w.end {
				groups[key{s.name, i}] = append(groups[key{s.name, i}], s.v)
				break
			}
		}
	}
	names := map[string]string{}
	for _, s := range all {
		names[s.name] = s.scenario
	}
	for name, scen := range names {
		for i, w := range wins[scen] {
			xs := groups[key{name, i}]
			st := indepStage{scenario: scen, startS: w.start, endS: w.end, samples: len(xs)}
			if len(xs) > 0 {
				var sum float64
				st.max = math.Inf(-1)
				for _, x := range xs {
					sum += x
					st.max = math.Max(st.max, x)
				}
				st.avg = sum / float64(len(xs))
				st.p50, st.p95, st.p99 = refPercentile(xs, 0.50), refPercentile(xs, 0.95), refPercentile(xs, 0.99)
			}
			out[name] = append(out[name], st)
		}
	}
	return out
}

// checkAgainstIndependent compares every stage row of r with the
// independent computation.
func checkAgainstIndependent(t *testing.T, r *StageReport, want map[string][]indepStage) {
	t.Helper()
	if len(r.Endpoints) != len(want) {
		t.Fatalf("%d endpoints in the report, %d independently", len(r.Endpoints), len(want))
	}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	for _, e := range r.Endpoints {
		w := want[e.Name]
		if len(e.Stages) != len(w) {
			t.Fatalf("%s: %d stages, want %d", e.Name, len(e.Stages), len(w))
		}
		for i, s := range e.Stages {
			x := w[i]
			if s.Samples != x.samples || s.Window.Start.Seconds() != x.startS || s.Window.End.Seconds() != x.endS {
				t.Errorf("%s stage %d: %d samples in %v-%v, want %d in %g-%g", e.Name, s.Stage, s.Samples, s.Window.Start, s.Window.End, x.samples, x.startS, x.endS)
				continue
			}
			if x.samples == 0 {
				continue
			}
			for _, c := range []struct {
				what      string
				got, want float64
			}{{"avg", *s.Avg, x.avg}, {"p50", *s.P50, x.p50}, {"p95", *s.P95, x.p95}, {"p99", *s.P99, x.p99}, {"max", *s.Max, x.max}} {
				if !close(c.got, c.want) {
					t.Errorf("%s stage %d %s: %v, independently %v", e.Name, s.Stage, c.what, c.got, c.want)
				}
			}
		}
	}
}

func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := io.ReadAll(fixtures.Open(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Four parallel per-endpoint scenarios with identical stages: one set of
// windows, every endpoint in one report, no scenario named; the stage
// tables equal the independent computation.
func TestPerEndpointParallelScenarios(t *testing.T) {
	o, err := k6options.Load(perEndpointInspect)
	if err != nil {
		t.Fatal(err)
	}
	st, err := o.Stages("")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Shared || len(st.Scenarios) != 4 || st.Filtered {
		t.Fatalf("staged set: shared %v, %d scenarios, filtered %v; want one shared set of 4", st.Shared, len(st.Scenarios), st.Filtered)
	}
	run, err := k6.Load(perEndpointRun, k6.LoadOptions{KeepPoints: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := BuildStageReport(run.Points, StageConfig{Scenario: st.Scenarios[0], Staged: st})
	if err != nil {
		t.Fatal(err)
	}
	if r.PerScenario || len(r.Windows) != 3 {
		t.Errorf("per-scenario %v, %d windows; want one set of 3", r.PerScenario, len(r.Windows))
	}
	inspect, err := os.ReadFile(perEndpointInspect)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstIndependent(t, r, independentStageTables(t, inspect, bytes.NewReader(gunzipFile(t, perEndpointRun))))
	// Without a configured order the endpoints follow the scenarios'
	// order in the file (k6 inspect sorts them by name).
	var got []string
	for _, e := range r.Endpoints {
		got = append(got, e.Name)
	}
	if strings.Join(got, ",") != "adaptive,standard,steady,target-aware" {
		t.Errorf("endpoint order %v", got)
	}
	for _, e := range r.Endpoints {
		if e.Requests != 1620 {
			t.Errorf("%s: %d requests, want the schedule's 1620", e.Name, e.Requests)
		}
	}
	// --scenario stays as a filter: one endpoint's samples only.
	one, err := o.Stages("steady")
	if err != nil {
		t.Fatal(err)
	}
	rf, err := BuildStageReport(run.Points, StageConfig{Scenario: one.Scenarios[0], Staged: one})
	if err != nil {
		t.Fatal(err)
	}
	if len(rf.Endpoints) != 1 || rf.Endpoints[0].Name != "steady" {
		t.Errorf("--scenario steady kept %d endpoints", len(rf.Endpoints))
	}
}

// Sequential per-endpoint ramps (each scenario starts when the previous
// ends): each sample is windowed by its own scenario's stages, the
// report says so, and the tables equal the independent computation.
func TestPerEndpointSequentialScenarios(t *testing.T) {
	starts := map[string]time.Duration{"steady": 0, "adaptive": 3 * time.Minute, "target-aware": 6 * time.Minute, "standard": 9 * time.Minute}
	dir := t.TempDir()
	runPath := filepath.Join(dir, "seq.ndjson")
	nd := perEndpointNDJSON(starts)
	if err := os.WriteFile(runPath, nd, 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := k6options.Load(perEndpointSequential)
	if err != nil {
		t.Fatal(err)
	}
	st, err := o.Stages("")
	if err != nil {
		t.Fatal(err)
	}
	if st.Shared {
		t.Fatal("scenarios with different start times share one set of windows")
	}
	run, err := k6.Load(runPath, k6.LoadOptions{KeepPoints: true})
	if err != nil {
		t.Fatal(err)
	}
	// Without a configured order, the endpoints follow their scenarios'
	// start times.
	plain, err := BuildStageReport(run.Points, StageConfig{Scenario: st.Scenarios[0], Staged: st})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range plain.Endpoints {
		order = append(order, e.Name)
	}
	if strings.Join(order, ",") != "steady,adaptive,target-aware,standard" {
		t.Errorf("endpoint order %v, want the scenarios' start order", order)
	}
	params := &Params{Endpoints: []string{"standard", "steady", "adaptive", "target-aware"}}
	r, err := BuildStageReport(run.Points, StageConfig{Scenario: st.Scenarios[0], Staged: st, Params: params, EndpointOrder: params.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	if !r.PerScenario {
		t.Fatal("not windowed per scenario")
	}
	inspect, err := os.ReadFile(perEndpointSequential)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstIndependent(t, r, independentStageTables(t, inspect, bytes.NewReader(nd)))
	var got []string
	for _, e := range r.Endpoints {
		got = append(got, e.Name)
	}
	if strings.Join(got, ",") != "standard,steady,adaptive,target-aware" {
		t.Errorf("endpoint order %v, want the configured one", got)
	}
	// standard ramps from 540 s: its first stage window says so.
	for _, e := range r.Endpoints {
		if e.Name == "standard" && e.Stages[0].Window.Start != 9*time.Minute {
			t.Errorf("standard's first window starts at %v", e.Stages[0].Window.Start)
		}
	}
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"each sample is windowed by the stages of its own scenario", "| standard | 1 | 540-600s |", "Endpoints: standard, steady, adaptive, target-aware"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}
