package envelope

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// runSpec is a run built in Go: the figures the envelope reads.
type runSpec struct {
	name                          string
	reqs, rps, iters, ips, failed float64
	avg, med, p95, p99, max       float64
	vus                           float64
	extra                         map[string]*k6.Metric
	scenario                      string
	start                         time.Time
}

func trend(name string, avg, med, p95, p99, max float64) *k6.Metric {
	return &k6.Metric{Name: name, Parent: name, Type: k6.Trend, Contains: k6.Time,
		Values: map[string]float64{"avg": avg, "min": med / 4, "med": med, "p(90)": (med + p95) / 2, "p(95)": p95, "p(99)": p99, "max": max}}
}

func (s runSpec) input() figures.Run {
	ms := map[string]*k6.Metric{
		"http_reqs":         {Name: "http_reqs", Parent: "http_reqs", Type: k6.Counter, Values: map[string]float64{"count": s.reqs, "rate": s.rps}},
		"iterations":        {Name: "iterations", Parent: "iterations", Type: k6.Counter, Values: map[string]float64{"count": s.iters, "rate": s.ips}},
		"http_req_failed":   {Name: "http_req_failed", Parent: "http_req_failed", Type: k6.Rate, Values: map[string]float64{"passes": s.failed, "fails": s.reqs - s.failed, "rate": s.failed / s.reqs}},
		"http_req_duration": trend("http_req_duration", s.avg, s.med, s.p95, s.p99, s.max),
		"vus_max":           {Name: "vus_max", Parent: "vus_max", Type: k6.Gauge, Values: map[string]float64{"value": s.vus, "min": s.vus, "max": s.vus}},
	}
	for k, v := range s.extra {
		ms[k] = v
	}
	if s.scenario != "" {
		n := "iteration_duration{scenario:" + s.scenario + "}"
		ms[n] = &k6.Metric{Name: n, Parent: "iteration_duration", Tags: map[string]string{"scenario": s.scenario}, Type: k6.Trend, Values: map[string]float64{"avg": 1}}
	}
	return mustRead(&k6.Run{Source: s.name, Format: k6.FormatSummaryExport, Mode: k6.ModeSummary, Metrics: ms, Duration: time.Duration(s.reqs / s.rps * float64(time.Second)), Start: s.start},
		figures.Source{File: s.name, SHA256: strings.Repeat("ab", 32)})
}

// mustRead takes a run's figures as the loader's callers do; the specs
// here are valid runs.
func mustRead(r *k6.Run, src figures.Source) figures.Run {
	f, err := figures.Read(r, src, figures.ReadOptions{})
	if err != nil {
		panic(err)
	}
	return f
}

// threeRuns are hand-checkable: rps 100, 102, 104 (mean 102, s = 2).
func threeRuns() []runSpec {
	return []runSpec{
		{name: "a.json", reqs: 10000, rps: 100, iters: 8000, ips: 80, avg: 50, med: 10, p95: 200, p99: 400, max: 900, vus: 50,
			extra: map[string]*k6.Metric{"login": trend("login", 300, 280, 500, 700, 800)}},
		{name: "b.json", reqs: 10200, rps: 102, iters: 8000, ips: 80, avg: 52, med: 12, p95: 220, p99: 420, max: 300, vus: 50,
			extra: map[string]*k6.Metric{"login": trend("login", 310, 290, 520, 720, 850)}},
		{name: "c.json", reqs: 10400, rps: 104, iters: 8000, ips: 80, avg: 54, med: 11, p95: 210, p99: 410, max: 1200, vus: 50,
			extra: map[string]*k6.Metric{"login": trend("login", 320, 300, 510, 710, 900)}},
	}
}

func inputs(specs []runSpec) []figures.Run {
	var in []figures.Run
	for _, s := range specs {
		in = append(in, s.input())
	}
	return in
}

// handMDC is the throughput MDC of threeRuns by the run-level model:
// rates 100, 102, 104 over 10,000, 10,200 and 10,400 requests.
func handMDC(t *testing.T) float64 {
	base := []stats.RunValue{{X: 100, LogVar: 1.0 / 10000}, {X: 102, LogVar: 1.0 / 10200}, {X: 104, LogVar: 1.0 / 10400}}
	typical := stats.RunValue{X: math.Cbrt(100 * 102 * 104), LogVar: 1.0 / 10200}
	m, ok := stats.RunLevelMDC(base, typical, 3, 0.95)
	if !ok || !(m > 0.02 && m < 0.1) {
		t.Fatalf("MDC by hand: %v, %v", m, ok)
	}
	return m
}

func TestComputeByHand(t *testing.T) {
	env, err := Compute(inputs(threeRuns()), Options{Name: "hand"})
	if err != nil {
		t.Fatal(err)
	}
	tt := []struct {
		name      string
		got, want float64
	}{
		{"throughput.mean", env.Throughput.Mean, 102},
		{"throughput.min", env.Throughput.Min, 100},
		{"throughput.max", env.Throughput.Max, 104},
		{"throughput.stddev (n-1)", env.Throughput.StdDev, 2},
		{"throughput.cv", env.Throughput.CV, 2.0 / 102},
		// t(0.975, 2) = 4.302653 · 2/√3
		{"throughput.ci95_low", env.Throughput.CILow, 102 - 4.302653*2/math.Sqrt(3)},
		// What a comparison detects with 3 later runs like the typical
		// one: 102 req/s, and a Poisson count of the mean 10,200 requests.
		{"throughput.mdc", env.Throughput.MDC, handMDC(t)},
		{"requests_per_iteration.mean", env.RequestsPerIteration.Mean, (1.25 + 1.275 + 1.3) / 3},
		{"latency.p95.min", env.Latency.P95.Min, 200},
		{"latency.p95.max", env.Latency.P95.Max, 220},
		{"latency.p95.mean (never averaged)", env.Latency.P95.Mean, 0},
		{"latency.median.mean", env.Latency.Median.Mean, 11},
		{"latency.avg.mean", env.Latency.Avg.Mean, 52},
		{"endpoints.login.avg.mean", env.Endpoints["login"].Avg.Mean, 310},
		{"endpoints.login.p99.max", env.Endpoints["login"].P99.Max, 720},
		{"endpoints.login.max.min", env.Endpoints["login"].Max.Min, 800},
		{"errors.total", float64(env.Errors.Total), 30600},
	}
	for _, c := range tt {
		if math.Abs(c.got-c.want) > 1e-4*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Maxima above the p99 band's top (420) are above p99 by nature, not
	// outliers: none of 900, 300 and 1200 is twice every other run's.
	var out []bool
	for _, r := range env.Runs {
		out = append(out, r.MaxOutlier)
	}
	if !slices.Equal(out, []bool{false, false, false}) {
		t.Errorf("max outliers = %v, want [false false false]", out)
	}
	if !env.Saturation.BelowSaturation || env.Saturation.Verdict != "below saturation" || len(env.Saturation.Reasons) != 3 {
		t.Errorf("saturation = %+v", env.Saturation)
	}
	if env.Provenance.Workload.VUs != 50 {
		t.Errorf("workload.vus = %d, want 50 (from vus_max)", env.Provenance.Workload.VUs)
	}
	if len(env.Warnings) != 0 {
		t.Errorf("unexpected warnings %q", env.Warnings)
	}
}

func TestComputeWarningsAndErrors(t *testing.T) {
	runs := threeRuns()
	tests := []struct {
		name    string
		specs   []runSpec
		opts    Options
		wantErr string
		warn    string
		verdict string
	}{
		{name: "single run", specs: runs[:1], warn: "a single run", verdict: "inconclusive"},
		{name: "two runs", specs: runs[:2], warn: "only 2 runs"},
		{name: "VUs differ", specs: []runSpec{runs[0], func() runSpec { r := runs[1]; r.vus = 100; return r }()},
			wantErr: "VUs: a.json has 50, b.json has 100"},
		{name: "VUs differ, forced", specs: []runSpec{runs[0], func() runSpec { r := runs[1]; r.vus = 100; return r }()},
			opts: Options{Force: true}, warn: "accepted with --force: VUs"},
		{name: "scenarios differ", specs: []runSpec{func() runSpec { r := runs[0]; r.scenario = "closed"; return r }(), func() runSpec { r := runs[1]; r.scenario = "open"; return r }()},
			wantErr: "scenarios: a.json has [closed], b.json has [open]"},
		{name: "metric sets differ", specs: []runSpec{runs[0], func() runSpec { r := runs[1]; r.extra = nil; return r }()},
			wantErr: "metric set: b.json lacks login"},
		{name: "metric set forced: band on one run", specs: []runSpec{runs[0], func() runSpec { r := runs[1]; r.extra = nil; return r }()},
			opts: Options{Force: true}, warn: "endpoint login: its band rests on a single run"},
		{name: "errors emerge", specs: []runSpec{runs[0], runs[1], func() runSpec { r := runs[2]; r.failed = 52; return r }()},
			warn: "", verdict: "signs of saturation"},
		{name: "wide p95 band", specs: []runSpec{runs[0], runs[1], func() runSpec { r := runs[2]; r.p95 = 400; r.p99 = 800; return r }()},
			verdict: "signs of saturation"},
		{name: "summary with --skip-warmup", specs: runs, opts: Options{SkipWarmup: time.Minute}, warn: "has no effect on summary files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Compute(inputs(tt.specs), tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "--force") {
					t.Fatalf("err = %v, want it to contain %q and mention --force", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.warn != "" && !slices.ContainsFunc(env.Warnings, func(w string) bool { return strings.Contains(w, tt.warn) }) {
				t.Errorf("warnings %q lack %q", env.Warnings, tt.warn)
			}
			if tt.verdict != "" && env.Saturation.Verdict != tt.verdict {
				t.Errorf("verdict %q (%q), want %q", env.Saturation.Verdict, env.Saturation.Reasons, tt.verdict)
			}
			if tt.verdict == "signs of saturation" && env.Saturation.BelowSaturation {
				t.Error("below_saturation must be false when signs are seen")
			}
		})
	}
}

func TestComputeNoRuns(t *testing.T) {
	if _, err := Compute(nil, Options{}); err != ErrNoRuns {
		t.Errorf("no runs: err = %v", err)
	}
}

func TestComputeMissingP99(t *testing.T) {
	in := inputs(threeRuns())
	in[0].P99 = 0
	env, err := Compute(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if env.Latency.P99.N != 2 {
		t.Errorf("p99 band n = %d, want 2", env.Latency.P99.N)
	}
	if !slices.ContainsFunc(env.Warnings, func(w string) bool { return strings.Contains(w, "add p(99) to summaryTrendStats") }) {
		t.Errorf("warnings %q lack the summaryTrendStats hint", env.Warnings)
	}
}

func TestSaturationWithinRuns(t *testing.T) {
	// One run whose second half is slower: p95 rises beyond the halves'
	// own error, so latency inflation is reported even though one run
	// alone has no band.
	spec := threeRuns()[0]
	in := spec.input()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in.Halves = &figures.Halves{Requests: [2]int64{60, 60}, P95: [2]float64{100, 200}, P95LogSE: [2]float64{0.1, 0.1}}
	in.Provenance.Start, in.Provenance.End = t0, t0.Add(2*time.Minute)
	env, err := Compute([]figures.Run{in}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if env.Saturation.Verdict != "signs of saturation" || !strings.Contains(strings.Join(env.Saturation.Reasons, ";"), "latency inflation within a.json") {
		t.Errorf("saturation = %+v", env.Saturation)
	}
	// Provenance takes the date from the sources, never the clock.
	if !env.Provenance.RunsEndedAt.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("runs_ended_at = %v, want the run's end", env.Provenance.RunsEndedAt)
	}
}

// The halves are tested against their own sampling error, one-sided at
// the envelope's confidence shared over the runs: a rise or drop within
// the error is no sign, and the verdict says how large a change the
// halves could have shown.
func TestSaturationHalvesTest(t *testing.T) {
	tests := []struct {
		name    string
		halves  figures.Halves
		verdict string
		reason  string
	}{
		{"p95 +10% on a wide error", figures.Halves{Requests: [2]int64{1650, 1650}, P95: [2]float64{100, 110}, P95LogSE: [2]float64{0.07, 0.07}},
			"below saturation", "a run's halves could have shown a p95 rise of 27.9% and a throughput drop of 8.3% (80% power)"},
		{"p95 +10% on a narrow error", figures.Halves{Requests: [2]int64{20000, 20000}, P95: [2]float64{100, 110}, P95LogSE: [2]float64{0.02, 0.02}},
			"signs of saturation", "latency inflation within a.json: p95 of the second half is 10.0% above the first, beyond its sampling error (a rise above 4.8% is one: one-sided test at 95%)"},
		{"p95 falls", figures.Halves{Requests: [2]int64{20000, 20000}, P95: [2]float64{110, 100}, P95LogSE: [2]float64{0.02, 0.02}},
			"below saturation", "no drift within runs"},
		{"throughput -10% in few requests", figures.Halves{Requests: [2]int64{100, 90}, P95: [2]float64{100, 100}, P95LogSE: [2]float64{0.05, 0.05}},
			"below saturation", "a throughput drop of 30.3%"},
		{"throughput -10% in many requests", figures.Halves{Requests: [2]int64{10000, 9000}, P95: [2]float64{100, 100}, P95LogSE: [2]float64{0.05, 0.05}},
			"signs of saturation", "throughput degradation within a.json: the second half ran 10.0% below the first"},
		{"throughput over the steady bins", figures.Halves{Requests: [2]int64{10000, 9000}, Rate: [2]float64{50, 50}, Counted: [2]int64{9900, 8900}, P95: [2]float64{100, 100}, P95LogSE: [2]float64{0.05, 0.05}},
			"below saturation", "no drift within runs"},
		{"p95 without its error", figures.Halves{Requests: [2]int64{1000, 1000}, P95: [2]float64{100, 200}},
			"below saturation", "the p95 of 1 run had no error to test with"},
	}
	// Five runs, each +12% with an error too wide to show alone: the
	// runs together show it.
	t.Run("a rise every run shares", func(t *testing.T) {
		var in []figures.Run
		for _, spec := range threeRuns() {
			r := spec.input()
			r.Halves = &figures.Halves{Requests: [2]int64{1650, 1650}, P95: [2]float64{100, 112}, P95LogSE: [2]float64{0.07, 0.07}}
			in = append(in, r, r)
		}
		env, err := Compute(in[:5], Options{Force: true})
		if err != nil {
			t.Fatal(err)
		}
		reasons := strings.Join(env.Saturation.Reasons, "\n")
		if env.Saturation.Verdict != "signs of saturation" || !strings.Contains(reasons, "latency inflation within runs: p95 of the second halves is 12.0% above the first halves over 5 runs together") || strings.Contains(reasons, "latency inflation within a.json") {
			t.Errorf("saturation = %q %q", env.Saturation.Verdict, reasons)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := threeRuns()[0].input()
			h := tt.halves
			in.Halves = &h
			env, err := Compute([]figures.Run{in}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if env.Saturation.Verdict != tt.verdict || !strings.Contains(strings.Join(env.Saturation.Reasons, "\n"), tt.reason) {
				t.Errorf("saturation = %q %q, want %q with %q", env.Saturation.Verdict, env.Saturation.Reasons, tt.verdict, tt.reason)
			}
		})
	}
}

func TestFileRoundTrip(t *testing.T) {
	env, err := Compute(inputs(threeRuns()), Options{Name: "rt"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []Format{YAML, JSON} {
		path := filepath.Join(dir, "envelope."+string(f))
		if err := WriteFile(path, env, f); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		a, _ := Marshal(env, JSON)
		b, _ := Marshal(got, JSON)
		if string(a) != string(b) {
			t.Errorf("%s round trip changed the envelope", f)
		}
	}
}

// These JSON keys are documented in docs/envelope.md; consumers rely on them.
func TestJSONKeys(t *testing.T) {
	env, err := Compute(inputs(threeRuns()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Marshal(env, JSON)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{
		"throughput.mean", "throughput.min", "throughput.max", "throughput.stddev", "throughput.cv",
		"iterations.mean", "iterations.min", "iterations.max", "requests_per_iteration.mean",
		"latency.p95.min", "latency.p95.max", "latency.p99.min", "latency.p99.max",
		"latency.median.min", "latency.median.max", "latency.median.mean",
		"errors.failed", "errors.total", "errors.rate",
		"endpoints.login.avg.min", "endpoints.login.median.max", "endpoints.login.p95.min",
		"endpoints.login.p99.max", "endpoints.login.max.min",
	} {
		var cur any = m
		for _, part := range strings.Split(key, ".") {
			obj, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = obj[part]
		}
		if _, ok := cur.(float64); !ok {
			t.Errorf("JSON lacks numeric %s", key)
		}
	}
}

func TestParseValidation(t *testing.T) {
	env, err := Compute(inputs(threeRuns()), Options{Name: "v"})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := Marshal(env, YAML)
	tests := []struct {
		name, from, to string
		want           string
	}{
		{"kind", "kind: Envelope", "kind: Other", `envelope.yaml:2: field kind: is "Other"`},
		{"min above max", "  min: 100\n  max: 104", "  min: 105\n  max: 104", "field throughput.min: 105 is above throughput.max 104"},
		{"ratio", "  throughput_drop: 0.05", "  throughput_drop: 1.5", "field tolerance.throughput_drop: is 1.5, want a ratio in [0,1]"},
		{"window", "  window: 5m", "  window: five", `field tolerance.window: "five" is not a Prometheus duration`},
		{"unknown field", "name: v", "name: v\nbogus: 1", "field bogus not found"},
		{"failed above total", "  failed: 0\n  total: 30600", "  failed: 40000\n  total: 30600", "field errors.failed: 40000 is above errors.total 30600"},
	}
	for _, tt := range tests {
		bad := strings.Replace(string(good), tt.from, tt.to, 1)
		if bad == string(good) {
			t.Fatalf("%s: %q not found in the YAML", tt.name, tt.from)
		}
		_, err := Parse("envelope.yaml", []byte(bad))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := Parse("e.json", []byte(`{"apiVersion": "envelope.dev/v1", "kind": "Envelope", "throughput": {"n": "five"}}`)); err == nil || !strings.Contains(err.Error(), "e.json:1: field throughput.n") {
		t.Errorf("JSON type error: %v", err)
	}
}

func TestReadK6Options(t *testing.T) {
	tests := []struct {
		file string
		want Workload
	}{
		{"k6/baseline-mix-v2.2.0/script.k6-inspect.json", Workload{VUs: 50, Executor: "constant-vus", Scenarios: []string{"baseline"}, Duration: "1m30s"}},
		// arrival: maxVUs 5, stages 7s; closed: 1 VU for 4s.
		{"k6/generated-v2.2.0/script.k6-inspect.json", Workload{VUs: 6, Executor: "constant-vus,ramping-arrival-rate", Scenarios: []string{"arrival", "closed"}, Duration: "7s"}},
	}
	for _, tt := range tests {
		got, err := ReadK6Options(fixtures.Path(t, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		if got.VUs != tt.want.VUs || got.Executor != tt.want.Executor || !slices.Equal(got.Scenarios, tt.want.Scenarios) || got.Duration != tt.want.Duration {
			t.Errorf("%s: %+v, want %+v", tt.file, *got, tt.want)
		}
	}
	if _, err := ParseK6Options("x.json", []byte(`{"scenarios": {"s": {"duration": "1m"}}}`)); err == nil || !strings.Contains(err.Error(), "scenarios.s.executor") {
		t.Errorf("missing executor: %v", err)
	}
	// Durations read as k6 (and the stage reports) read them: Go syntax,
	// or milliseconds as a number or a bare numeric string.
	for _, d := range []string{`"1m30s"`, `90000`, `"90000"`} {
		w, err := ParseK6Options("x.json", []byte(`{"scenarios": {"s": {"executor": "constant-vus", "vus": 3, "duration": `+d+`}}}`))
		if err != nil || w.Duration != "1m30s" || w.VUs != 3 {
			t.Errorf("duration %s: %+v, %v; want 1m30s and 3 VUs", d, w, err)
		}
	}
	if _, err := ParseK6Options("x.json", []byte(`{"scenarios": {"s": {"executor": "constant-vus", "duration": "soon"}}}`)); err == nil || !strings.Contains(err.Error(), "scenarios.s.duration") {
		t.Errorf("bad duration: %v", err)
	}
}
