package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/promtest"
)

// ecsEnvelope is a testdata envelope with an ECS operating point like the
// user's: one 256 CPU / 512 MiB task below saturation.
func ecsEnvelope(t *testing.T) *envelope.Envelope {
	t.Helper()
	env, err := envelope.ReadFile(filepath.Join("testdata", "single-endpoint.envelope.json"))
	if err != nil {
		t.Fatal(err)
	}
	env.ECS = &envelope.ECS{
		TaskCPUUnits: 256, TaskMemoryMiB: 512, Tasks: 1,
		CPUUtilisation:       envelope.Band{Min: 0.3, Max: 0.45, Mean: 0.38, N: 3},
		MemoryUtilisation:    envelope.Band{Min: 0.4, Max: 0.5, Mean: 0.45, N: 3},
		CPUSecondsPerRequest: envelope.Band{Min: 0.0035, Max: 0.004, Mean: 0.0038, N: 3},
	}
	return env
}

func TestECSGroup(t *testing.T) {
	tests := []struct {
		name       string
		ecs        func(*envelope.Envelope)
		wantAlerts []string
	}{
		{"no ECS figures, no group", func(e *envelope.Envelope) { e.ECS = nil }, nil},
		{"full", func(*envelope.Envelope) {}, []string{AlertECSCPUSaturated, AlertECSMemoryNearLimit,
			AlertECSTasksBelowDesired, AlertECSMetadataDown, AlertECSCloudWatchFailing, AlertECSCPUPerRequestHigh}},
		{"no CPU per request band", func(e *envelope.Envelope) { e.ECS.CPUSecondsPerRequest = envelope.Band{} },
			[]string{AlertECSCPUSaturated, AlertECSMemoryNearLimit, AlertECSTasksBelowDesired, AlertECSMetadataDown, AlertECSCloudWatchFailing}},
	}
	p := parser.NewParser(parser.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := ecsEnvelope(t)
			tt.ecs(env)
			f, _, err := Generate(env, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			b, err := Marshal(env, f)
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate("ecs", b); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range f.Groups {
				if !strings.HasSuffix(g.Name, "-ecs.rules") && !strings.HasSuffix(g.Name, "-ecs.alerts") {
					continue
				}
				for _, r := range g.Rules {
					if _, err := p.ParseExpr(r.Expr); err != nil {
						t.Errorf("%s%s: %v", r.Record, r.Alert, err)
					}
					if r.Alert == "" {
						continue
					}
					got = append(got, r.Alert)
					if !camel.MatchString(r.Alert) || !summaryStyle.MatchString(r.Annotations["summary"]) ||
						!strings.Contains(r.Annotations["description"], "$value") ||
						!strings.HasSuffix(r.Annotations["runbook_url"], "#"+strings.ToLower(r.Alert)) || r.For == "" {
						t.Errorf("%s breaks the alert conventions: %+v", r.Alert, r)
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.wantAlerts, ",") {
				t.Errorf("alerts %v, want %v", got, tt.wantAlerts)
			}
		})
	}
}

// TestECSPromtool runs promtool unit tests of the ECS alerts: each fires
// on a regressed target and stays silent on a baseline-like one.
func TestECSPromtool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs promtool")
	}
	env := ecsEnvelope(t)
	f, c, err := Generate(env, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	b, err := newTestBuilder(env, f, c, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	const limit = 536870912.0 // 512 MiB
	hot := map[string]string{"instance": "10.0.0.1:19466", "job": "ecs"}
	cool := map[string]string{"instance": "10.0.0.2:19466", "job": "ecs"}
	with := func(l map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range l {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// hot: 0.24 vCPU of 0.25, working set 520 MB of 512 MiB; cool: 0.1 vCPU, 200 MB.
	b.add("ecs_container_cpu_usage_seconds_total", with(hot, "container_name", "app"), linear(0.23))
	b.add("ecs_container_cpu_usage_seconds_total", with(hot, "container_name", "exporter"), linear(0.01))
	b.add("ecs_container_cpu_usage_seconds_total", with(cool, "container_name", "app"), linear(0.1))
	for _, l := range []map[string]string{hot, cool} {
		b.add("ecs_task_cpu_limit_vcpus", l, constant(0.25))
		b.add("ecs_task_memory_limit_bytes", l, constant(limit))
		b.add("ecs_container_memory_limit_bytes", with(l, "container_name", "app"), constant(limit))
		b.add("ecs_container_memory_limit_bytes", with(l, "container_name", "exporter"), constant(limit))
		b.add("ecs_container_memory_working_set_bytes", with(l, "container_name", "exporter"), constant(20e6))
	}
	b.add("ecs_container_memory_working_set_bytes", with(hot, "container_name", "app"), constant(500e6))
	b.add("ecs_container_memory_working_set_bytes", with(cool, "container_name", "app"), constant(180e6))
	b.add("ecs_up", hot, constant(1))
	b.add("ecs_up", cool, constant(0))
	cw := map[string]string{"instance": "exporter:19466", "job": "envelope-exporter"}
	b.add("envelope_exporter_cloudwatch_up", cw, constant(0))
	b.add("ecs_service_running_tasks", with(cw, "cluster_name", "perf", "service_name", "api"), constant(1))
	b.add("ecs_service_desired_tasks", with(cw, "cluster_name", "perf", "service_name", "api"), constant(2))
	b.add("ecs_service_running_tasks", with(cw, "cluster_name", "perf", "service_name", "worker"), constant(2))
	b.add("ecs_service_desired_tasks", with(cw, "cluster_name", "perf", "service_name", "worker"), constant(2))
	b.add(reqs, tid("run"), linear(50)) // 0.34 CPU s/s over 50 req/s = 0.0068 s/request

	expect := func(alert string, l map[string]string, v float64) expectAlert {
		t.Helper()
		rs := b.rule[alert]
		if len(rs) != 1 {
			t.Fatalf("%s: %d rules", alert, len(rs))
		}
		e, err := b.expect(rs[0], l, v)
		if err != nil {
			t.Fatal(err)
		}
		e.ExpLabels["alertname"] = alert
		return e
	}
	g := promtoolGroup{Name: "ECS alerts fire on the regressed target only", Interval: testStep.String(), InputSeries: b.in}
	for _, at := range []struct {
		alert string
		exp   []expectAlert
	}{
		{AlertECSCPUSaturated, []expectAlert{expect(AlertECSCPUSaturated, hot, 0.96)}},
		{AlertECSMemoryNearLimit, []expectAlert{
			expect(AlertECSMemoryNearLimit, hot, 520e6/limit),
			expect(AlertECSMemoryNearLimit, with(hot, "container_name", "app"), 500e6/limit),
		}},
		{AlertECSTasksBelowDesired, []expectAlert{expect(AlertECSTasksBelowDesired, with(cw, "cluster_name", "perf", "service_name", "api"), 1)}},
		{AlertECSMetadataDown, []expectAlert{expect(AlertECSMetadataDown, cool, 0)}},
		{AlertECSCloudWatchFailing, []expectAlert{expect(AlertECSCloudWatchFailing, cw, 0)}},
		{AlertECSCPUPerRequestHigh, []expectAlert{expect(AlertECSCPUPerRequestHigh, map[string]string{}, 0.0068)}},
	} {
		g.AlertTests = append(g.AlertTests, promtoolAlert{EvalTime: testEval, Alertname: at.alert, ExpAlerts: at.exp})
	}
	dir := t.TempDir()
	rb, err := Marshal(env, f)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := marshalYAML(promtoolFile{RuleFiles: []string{RulesFile}, EvaluationInterval: testStep.String(), Tests: []promtoolGroup{g}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RulesFile), rb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ecs.test.yaml"), tb, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := promtest.Promtool(t, "test", "rules", filepath.Join(dir, "ecs.test.yaml")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
