package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// Without ECS snapshots, baseline records the endpoints' display names and
// the topology the user states, and the envelope report says them.
func TestBaselineLabelsAndTopology(t *testing.T) {
	dir := t.TempDir()
	params := filepath.Join(dir, "params.yaml")
	if err := os.WriteFile(params, []byte("labels:\n  auth_login: Auth login (Cognito)\ntopology:\n  tasks_per_service: 1\n  task_cpu_units: 256\n  task_memory_mib: 512\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "envelope.yaml")
	args := append([]string{"baseline", "--params", params, "--endpoint-label", "auth_register=Auth register (Cognito)",
		"--topology", "runtime=GraalVM native images", "--topology", "load_generator=in-VPC EC2", "--out", out}, demoRuns(5)...)
	if code, _, se := cmdlinetest.Capture(runCLI, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, se)
	}
	env, err := envelope.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := env.Endpoints["auth_login"].Label; got != "Auth login (Cognito)" {
		t.Errorf("auth_login label %q", got)
	}
	if env.Topology == nil || env.Topology.TaskCPUUnits != 256 || env.Topology.Runtime != "GraalVM native images" {
		t.Errorf("topology %+v", env.Topology)
	}
	md := filepath.Join(dir, "report.md")
	if code, _, se := cmdlinetest.Capture(runCLI, "report", "--envelope", out, "--out", md); code != 0 {
		t.Fatalf("report: exit %d: %s", code, se)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"At 50 concurrent users, 1 ECS task per service, 256 CPU / 512 MiB, GraalVM native images, load generator in-VPC EC2, the system sustains about 56.1 req/s",
		"### Auth login (Cognito)", "### Auth register (Cognito)",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--endpoint-label", "nope=Nope"}, "nope: no such endpoint (endpoints: actor_get, auth_login"},
		{[]string{"--topology", "tasks=none"}, `tasks "none": want a positive whole number`},
		{[]string{"--topology", "colour=blue"}, `unknown topology key "colour"`},
		{[]string{"--endpoint-label", "auth_login"}, "want NAME=LABEL"},
	} {
		args := append(append([]string{"baseline", "--out", filepath.Join(dir, "x.yaml")}, tc.args...), demoRuns(3)...)
		code, _, se := cmdlinetest.Capture(runCLI, args...)
		if code != 2 || !strings.Contains(se, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, se, tc.want)
		}
	}
}
