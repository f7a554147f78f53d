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

// simulatedRunsSeeds are TestSimulatedRuns' seeds, apart from those
// measured (1001–1100) and TestDetectionPower's (2001–2020).
var simulatedRunsSeeds = seedRange(3001, 20)

// simulatedRunsGuard is what TestSimulatedRuns asserts: the rates
// BenchmarkDetectionPower measured with the demo envelope's rules and
// runs drawn with simulate.ClusteredVariance (docs/rules.md; baseline and
// throughput over seeds 1001–1100, the others over 1001–1050).
var simulatedRunsGuard = powerGuard{
	falseAlarms("baseline"):                    {3, 100},
	falseAlarms("auth_register latency ×1.15"): {1, 50},
	falseAlarms("1% failed requests"):          {2, 50},
	falseAlarms("throughput ×0.90"):            {2, 100},
	"auth_register latency ×1.15 / " + rules.AlertEndpointLatency + "{auth_register}": {38, 50},
	"1% failed requests / " + rules.AlertRequestsFailing:                              {50, 50},
	"throughput ×0.90 / " + rules.AlertThroughputLow:                                  {100, 100},
}

// The acceptance backtest on simulated runs of the demo envelope, over
// 20 seeds whose runs differ as real runs do (simulate.ClusteredVariance:
// run-level factors and slow requests that come together): clean runs
// stay silent but for the rare false alarm the measurement saw, and each
// injected regression fires its alert within for plus two evaluation
// intervals of the earliest moment the rule can see it, as often as the
// binomial floor below its measured rate; a regression's runs fire no
// other alert beyond the measured rate (the overall p99 may follow
// auth_register, whose requests are the overall tail). With the demo
// envelope's tolerances broken on purpose the same check must fail.
func TestSimulatedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("simulated runs")
	}
	env, model := demoModel(t)
	v := simulate.ClusteredVariance()
	demo := newPowerEnv(t, env)
	const scenarios = `^(baseline|auth_register latency ×1\.15|1% failed requests|throughput ×0\.90)$`
	outs := runPower(t, model, func(uint64) powerEnv { return demo }, simulatedRunsSeeds, scenarios, v)
	t.Logf("seeds %d–%d\n%s", simulatedRunsSeeds[0], simulatedRunsSeeds[len(simulatedRunsSeeds)-1], powerTable(outs))
	for _, f := range powerFailures(outs, simulatedRunsGuard) {
		t.Error(f)
	}

	// Broken on purpose: a latency tolerance of 50% and an error
	// tolerance of 2% hide both regressions from the rules.
	broken := *env
	broken.Tolerance.LatencyRise, broken.Tolerance.ErrorRatio = 0.5, 0.02
	pb := newPowerEnv(t, &broken)
	bad := runPower(t, model, func(uint64) powerEnv { return pb }, simulatedRunsSeeds, `^(auth_register latency ×1\.15|1% failed requests)$`, v)
	fails := strings.Join(powerFailures(bad, simulatedRunsGuard), "\n")
	for _, want := range []string{"auth_register latency ×1.15, " + rules.AlertEndpointLatency, "1% failed requests, " + rules.AlertRequestsFailing} {
		if !strings.Contains(fails, want) {
			t.Errorf("tolerances broken on purpose: the guard does not fail on %s:\n%s", want, powerTable(bad))
		}
	}
	t.Logf("tolerances broken on purpose fail the guard, as they must:\n%s", fails)
}

// runLength is the length of the user's k6 runs.
const runLength = 6 * time.Minute

// The false-alarm check over many baseline seeds: twenty simulated
// 6-minute baseline runs of the demo envelope, sampling noise only.
// Every bound targets a 0.1% false-alarm probability per evaluation and a
// `for` of at least four consecutive evaluations, so none of the 480
// evaluations (24 a run) of each alert may fire: a firing is far rarer
// than one run in a thousand under the budget, and none of the 72
// baseline runs measured without run-level variance fired (docs/rules.md).
func TestSimulatedBaselineSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("twenty simulated runs")
	}
	env, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := rulesFor(t, env)
	dir := t.TempDir()
	for seed := uint64(101); seed <= 120; seed++ {
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
