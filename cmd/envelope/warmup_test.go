package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// sixMinFiles are the six-minute baseline-mix runs (3 min warm-up, 3 min
// load): baselines a, b and c, the regressed run, the script's options,
// and the k6 summary of run a.
type sixMinFiles struct {
	A, B, C, Regressed, Options, SummaryA string
}

func sixMin(t testing.TB) sixMinFiles {
	t.Helper()
	const dir = "k6/baseline-mix-v2.2.0/"
	runs := fixtures.Baselines(t)
	return sixMinFiles{
		A: runs[0], B: runs[1], C: runs[2],
		Regressed: fixtures.Path(t, dir+"regressed-auth-errors.ndjson.gz"),
		Options:   fixtures.Path(t, dir+"script-6m.k6-inspect.json"),
		SummaryA:  fixtures.Path(t, dir+"baseline-a.summary.json"),
	}
}

// sixMinEnvelope is the envelope of runs a, b and c with the first 3
// minutes skipped.
func sixMinEnvelope(t *testing.T) (string, string) {
	t.Helper()
	f := sixMin(t)
	out := filepath.Join(t.TempDir(), "envelope.yaml")
	code, so, se := cmdlinetest.Capture(runCLI, "baseline", "--skip-warmup", "3m", "--k6-options", f.Options, "--group-by", "name", "--out", out, f.A, f.B, f.C)
	if code != 0 {
		t.Fatalf("baseline: exit %d: %s", code, se)
	}
	if !strings.Contains(so, "envelope: "+out) {
		t.Fatalf("baseline stdout: %s", so)
	}
	return out, se
}

func TestWarmupWindowFollowsTheEnvelope(t *testing.T) {
	envPath, logs := sixMinEnvelope(t)
	// The options say 6m and the runs lasted 6 minutes, 3 of them
	// skipped on purpose: no duration warning.
	if strings.Contains(logs, "duration") {
		t.Errorf("spurious duration warning: %s", logs)
	}
	env, err := envelope.ReadFile(envPath)
	if err != nil {
		t.Fatal(err)
	}
	if env.Provenance.SkipWarmup != "3m0s" || env.Provenance.Workload.Duration != "6m0s" {
		t.Errorf("provenance skip_warmup %q, workload duration %q; want 3m0s and 6m0s", env.Provenance.SkipWarmup, env.Provenance.Workload.Duration)
	}
	for _, r := range env.Runs {
		if r.DurationSeconds < 170 || r.DurationSeconds > 190 {
			t.Errorf("run %s measured over %.0fs; want about 180s after the warm-up", r.Source, r.DurationSeconds)
		}
	}
	f := sixMin(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"baseline run passes", []string{f.C}, 0, "Result: no regression"},
		{"window stated", []string{f.A}, 0, "first 3m0s of each candidate skipped as warm-up"},
		{"regressed run", []string{f.Regressed}, 1, "regress"},
		{"whole run on request", []string{"--skip-warmup", "0", f.C}, -1, "whole run"},
		{"json says the window", []string{"--format", "json", f.C}, 0, `"skip_warmup": "3m0s"`},
		{"negative window", []string{"--skip-warmup=-1m", f.C}, 2, "non-negative"},
		{"summary cannot skip", []string{f.SummaryA}, 2, "a summary file holds whole-run figures, so the envelope's warm-up of 3m0s cannot be skipped"},
		{"summary whole run on request", []string{"--skip-warmup", "0", f.SummaryA}, -1, "whole run"},
		{"run shorter than the warm-up", []string{shortRun(t)}, 2, "the run (1m33s) is no longer than the envelope's warm-up (3m0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, so, se := cmdlinetest.Capture(runCLI, append([]string{"compare", "--envelope", envPath}, tc.args...)...)
			if tc.code >= 0 && code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, so, se)
			}
			if tc.code < 0 && code == 2 {
				t.Fatalf("the whole run is the same workload, yet exit 2: %s", se)
			}
			if !strings.Contains(strings.ToLower(so+se), strings.ToLower(tc.want)) {
				t.Errorf("want %q in output\nstdout: %s\nstderr: %s", tc.want, so, se)
			}
		})
	}
}

// shortRun writes the first 1m33s of the regressed six-minute run: a run
// stopped before the envelope's 3-minute warm-up ended.
func shortRun(t *testing.T) string {
	t.Helper()
	zr := fixtures.Open(t, sixMin(t).Regressed)
	out := filepath.Join(t.TempDir(), "short.ndjson")
	var b bytes.Buffer
	var start time.Time
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Data struct {
				Time time.Time `json:"time"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err == nil && !l.Data.Time.IsZero() {
			if start.IsZero() {
				start = l.Data.Time
			}
			if l.Data.Time.Sub(start) > 93*time.Second {
				break
			}
		}
		b.Write(sc.Bytes())
		b.WriteByte('\n')
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
