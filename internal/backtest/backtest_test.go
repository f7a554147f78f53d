package backtest

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/rules"
	"github.com/envelope-dev/envelope/internal/simulate"
)

// rulesFor writes the generated rules of env into a temp folder.
func rulesFor(t testing.TB, env *envelope.Envelope) []string {
	t.Helper()
	dir := t.TempDir()
	if _, err := rules.WriteDir(dir, env, rules.DefaultOptions(), rules.FormatPrometheus); err != nil {
		t.Fatal(err)
	}
	files, err := RuleFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func names(r *Run) []string {
	var out []string
	for _, a := range r.Alerts {
		n := a.Alertname
		if e := a.Labels["endpoint"]; e != "" {
			n += "/" + e
		}
		if q := a.Labels["quantile"]; q != "" {
			n += "/" + q
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// firstFiring is when alertname first fired, or -1.
func firstFiring(r *Run, alertname string) float64 {
	for _, a := range r.Alerts {
		if a.Alertname == alertname {
			return a.FirstFiringS
		}
	}
	return -1
}

// The acceptance backtest on the real 6-minute k6 runs: the envelope comes
// from baseline-a and baseline-b, the rules from it; baseline-c must fire
// nothing and the regressed run (auth ×1.25, 503s on uploads) must fire
// the latency and error alerts.
func TestRealRuns(t *testing.T) {
	env := realEnvelope(t)
	files := rulesFor(t, env)
	ctx := context.Background()

	base, err := File(ctx, env, files, fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-c.ndjson.gz"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Alerts) != 0 {
		t.Errorf("baseline-c: false alarms %v", names(base))
	}
	if base.DurationS < 350 {
		t.Errorf("baseline-c: %gs of points, want about 6m", base.DurationS)
	}

	reg, err := File(ctx, env, files, fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range reg.Alerts {
		t.Logf("regressed run: %s %v at %gs", a.Alertname, a.Labels, a.FirstFiringS)
	}
	got := strings.Join(names(reg), " ")
	for _, want := range []string{rules.AlertRequestsFailing, rules.AlertEndpointLatency + "/auth_", rules.AlertLatencyHigh} {
		if !strings.Contains(got, want) {
			t.Errorf("regressed run: %s did not fire; fired: %s", want, got)
		}
	}
	for _, unwanted := range []string{rules.AlertThroughputLow, rules.AlertNoTraffic, rules.AlertExporterDown} {
		if strings.Contains(got, unwanted) {
			t.Errorf("regressed run: %s fired", unwanted)
		}
	}
	// Errors: the first 503 shows at the next scrape; firing follows
	// after for (1m) plus at most two evaluations.
	if s := firstFiring(reg, rules.AlertRequestsFailing); s < 0 || s > 60+15+30+60 {
		t.Errorf("errors alert first fired at %gs", s)
	}
}

// The acceptance backtest on simulated runs of the demo envelope: two
// baseline seeds stay silent; each injected regression fires its alert
// within for plus two evaluation intervals of the earliest moment the
// rule can see it.
func TestSimulatedRuns(t *testing.T) {
	env, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := rulesFor(t, env)
	c, err := rules.Calibrate(env)
	if err != nil {
		t.Fatal(err)
	}
	tw := c.Throughput.Window.Seconds()
	const eval, forLat = 15.0, 60.0
	cases := []struct {
		name string
		o    simulate.Options
		want string // alert that must fire ("…/" = any with that prefix); "" = none
		// also may fire with it: the overall p99 follows auth_register,
		// whose requests are the overall tail.
		alsoOK string
		// deadline in seconds: earliest visibility + for + 2 evaluations
		deadline float64
	}{
		{"baseline seed 11", simulate.Options{Seed: 11}, "", "", 0},
		{"baseline seed 12", simulate.Options{Seed: 12}, "", "", 0},
		// The endpoint's median test (quantile 0.5) sees a shift of the
		// whole distribution first; its p95 test may follow.
		{"auth_register p95 +15%", simulate.Options{Seed: 13, LatencyFactor: map[string]float64{"auth_register": 1.15}},
			rules.AlertEndpointLatency + "/auth_register/", rules.AlertLatencyHigh,
			visibleAt(t, env, c, "auth_register", 1.15, eval) + forLat + 2*eval},
		{"1% failed requests", simulate.Options{Seed: 14, ErrorRate: 0.01},
			rules.AlertRequestsFailing, "", eval + forLat + 2*eval},
		// The throughput alert reads its own window, calibrated so a
		// 2×tolerance drop is seen within a 6-minute run.
		{"throughput -10%", simulate.Options{Seed: 15, ThroughputFactor: 0.9},
			rules.AlertThroughputLow, "", tw + forLat + 2*eval},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The user's runs are 6 minutes (3m warm-up, 3m load): every
			// alert must make its deadline inside one.
			tc.o.Duration = runLength
			path := filepath.Join(t.TempDir(), "run.ndjson.gz")
			if err := simulate.WriteFile(path, env, tc.o); err != nil {
				t.Fatal(err)
			}
			r, err := File(context.Background(), env, files, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := names(r)
			t.Logf("fired: %v (deadline %gs)", r.Alerts, tc.deadline)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("false alarms: %v", got)
				}
				return
			}
			found := false
			for _, n := range got {
				switch {
				case n == tc.want || strings.HasSuffix(tc.want, "/") && strings.HasPrefix(n, tc.want):
					found = true
				case tc.alsoOK != "" && strings.HasPrefix(n, tc.alsoOK+"/"):
				default:
					t.Errorf("unintended alert %s", n)
				}
			}
			if !found {
				t.Fatalf("%s did not fire; fired %v", tc.want, got)
			}
			name := strings.SplitN(tc.want, "/", 2)[0]
			if s := firstFiring(r, name); s > tc.deadline {
				t.Errorf("%s first fired at %gs, deadline %gs", name, s, tc.deadline)
			}
		})
	}
}

// runLength is the length of the user's k6 runs.
const runLength = 6 * time.Minute

// The false-alarm check over many baseline seeds: ten simulated 6-minute
// baseline runs of the demo envelope. Every bound targets a 0.1% false-
// alarm probability per evaluation and a `for` of at least four
// consecutive evaluations, so none of the 240 evaluations (24 a run) of
// each alert may fire.
func TestSimulatedBaselineSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("ten simulated runs")
	}
	env, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := rulesFor(t, env)
	dir := t.TempDir()
	for seed := uint64(101); seed <= 110; seed++ {
		path := filepath.Join(dir, "run.ndjson")
		if err := simulate.WriteFile(path, env, simulate.Options{Seed: seed, Duration: runLength}); err != nil {
			t.Fatal(err)
		}
		r, err := File(context.Background(), env, files, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.DurationS < runLength.Seconds()-30 {
			t.Errorf("seed %d: %gs of points, want about 6m", seed, r.DurationS)
		}
		if len(r.Alerts) != 0 {
			t.Errorf("seed %d: false alarms %v", seed, names(r))
		}
	}
}

func TestBadInput(t *testing.T) {
	env, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := rulesFor(t, env)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.ndjson")
	cases := map[string]string{
		"not json":    "{\"type\":\"Metric\",\"data\":{\"name\":\"http_reqs\",\"type\":\"counter\",\"contains\":\"default\"},\"metric\":\"http_reqs\"}\nnot json\n",
		"point first": `{"metric":"http_reqs","type":"Point","data":{"time":"2026-01-01T00:00:00Z","value":1,"tags":{}}}` + "\n",
		"no points":   "",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			if err := writeFile(bad, content); err != nil {
				t.Fatal(err)
			}
			_, err := File(context.Background(), env, files, bad, Options{})
			if err == nil || !strings.Contains(err.Error(), "bad.ndjson") {
				t.Fatalf("error %v, want one naming the file", err)
			}
		})
	}
}
