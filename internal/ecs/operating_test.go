package ecs

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

// fargateSnapshot returns the Fargate fixture as a snapshot at t with the
// two running containers' CPU counters set (in seconds) and memory usage
// raised by extraMem bytes.
func fargateSnapshot(t *testing.T, at time.Time, taskARN string, promCPU, exporterCPU float64, extraMem uint64) Snapshot {
	t.Helper()
	var task TaskMetadata
	if err := json.Unmarshal(readFile(t, filepath.Join("testdata", "fixtures", "fargate_task_metadata.json")), &task); err != nil {
		t.Fatal(err)
	}
	var stats map[string]*ContainerStats
	if err := json.Unmarshal(readFile(t, filepath.Join("testdata", "fixtures", "fargate_task_stats.json")), &stats); err != nil {
		t.Fatal(err)
	}
	task.TaskARN = taskARN
	for _, c := range task.Containers {
		s := stats[c.DockerID]
		if s.Empty() {
			continue
		}
		s.Read = at
		switch c.Name {
		case "prometheus":
			s.CPUStats.Usage.Total = uint64(math.Round(promCPU * 1e9))
			s.Memory.Usage += extraMem
		case "ecs-exporter":
			s.CPUStats.Usage.Total = uint64(math.Round(exporterCPU * 1e9))
		}
	}
	return Snapshot{Time: at, Task: &task, Stats: stats}
}

func TestOperatingPoint(t *testing.T) {
	const arn = "arn:aws:ecs:us-east-1:1:task/perf/aaaa"
	base := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	// Three 60s runs, 5 minutes apart, at 50 req/s; the app uses 0.08,
	// 0.10 and 0.09 vCPU and the exporter sidecar 0.01.
	appRates := []float64{0.08, 0.10, 0.09}
	var snaps []Snapshot
	var runs []Run
	promCPU, expCPU := 10.0, 1.0 // counters carried across runs
	for i, r := range appRates {
		start := base.Add(time.Duration(i) * 5 * time.Minute)
		runs = append(runs, Run{Name: "run", Start: start, End: start.Add(time.Minute), Requests: 3000})
		for k := 0; k <= 6; k++ {
			var extra uint64
			if i == 1 && k == 3 {
				extra = 100 << 20 // a 100 MiB spike in run 2
			}
			snaps = append(snaps, fargateSnapshot(t, start.Add(time.Duration(k)*10*time.Second), arn, promCPU, expCPU, extra))
			promCPU += r * 10
			expCPU += 0.01 * 10
		}
		promCPU += 50 // idle between runs: outside every window
	}
	// A snapshot outside every run must not count.
	snaps = append(snaps, fargateSnapshot(t, base.Add(-time.Hour), arn, 0, 0, 0))

	got, err := OperatingPoint(snaps, runs)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 512 << 20
	ws := float64(127934464-52383744+84111360-39100416) / limit // fixture working sets
	tests := []struct {
		name string
		got  envelope.Band
		want envelope.Band
	}{
		{"cpu utilisation", got.CPUUtilisation, envelope.Band{Min: 0.36, Max: 0.44, Mean: 0.4, N: 3}},
		{"memory utilisation (peak)", got.MemoryUtilisation, envelope.Band{Min: ws, Max: ws + float64(100<<20)/limit, Mean: ws + float64(100<<20)/limit/3, N: 3}},
		{"cpu seconds per request", got.CPUSecondsPerRequest, envelope.Band{Min: 0.0018, Max: 0.0022, Mean: 0.002, N: 3}},
	}
	for _, tt := range tests {
		if !near(tt.got.Min, tt.want.Min) || !near(tt.got.Max, tt.want.Max) || !near(tt.got.Mean, tt.want.Mean) || tt.got.N != tt.want.N {
			t.Errorf("%s = %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
	if got.TaskCPUUnits != 256 || got.TaskMemoryMiB != 512 || got.Tasks != 1 {
		t.Errorf("task size %d CPU / %d MiB x %d tasks, want 256 / 512 x 1", got.TaskCPUUnits, got.TaskMemoryMiB, got.Tasks)
	}

	// A second task in run 1 counts towards Tasks and the CPU figures.
	for k := 0; k <= 6; k++ {
		snaps = append(snaps, fargateSnapshot(t, base.Add(time.Duration(k)*10*time.Second), arn+"b", float64(k)*0.5, 0, 0))
	}
	got, err = OperatingPoint(snaps, runs)
	if err != nil {
		t.Fatal(err)
	}
	// Run 1: (0.09 + 0.05) vCPU over 2 x 0.25 = 0.28; per request (0.14 x 60) / 3000.
	if got.Tasks != 2 || !near(got.CPUUtilisation.Min, 0.28) || !near(got.CPUSecondsPerRequest.Max, 0.0028) {
		t.Errorf("two tasks: %+v", got)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestOperatingPointErrors(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	run := []Run{{Start: at, End: at.Add(time.Minute), Requests: 10}}
	one := fargateSnapshot(t, at, "arn:t", 1, 1, 0)
	other := fargateSnapshot(t, at.Add(10*time.Second), "arn:t", 2, 1, 0)
	bigger := 1024.0
	other.Task.Limits.Memory = &bigger
	for _, tt := range []struct {
		name  string
		snaps []Snapshot
		want  string
	}{
		{"one snapshot", []Snapshot{one}, "no run has two snapshots"},
		{"mixed sizes", []Snapshot{one, other}, "mix task sizes"},
	} {
		if _, err := OperatingPoint(tt.snaps, run); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestCPUDeltaRestart(t *testing.T) {
	a := taskPoint{cpu: map[string]uint64{"app": 5e9, "sidecar": 1e9}}
	b := taskPoint{cpu: map[string]uint64{"app": 7e9, "sidecar": 2e8, "new": 1e8}}
	// app +2s; sidecar restarted: its new counter 0.2s; new container 0.1s.
	if got := cpuDelta(a, b); !near(got, 2.3) {
		t.Fatalf("cpuDelta = %v, want 2.3", got)
	}
}

func TestRecordAndRead(t *testing.T) {
	c, err := NewClient(fixtureServer(t, "ec2").URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := Record(context.Background(), c, &buf, time.Millisecond, 2, nil)
	if err != nil || n != 2 {
		t.Fatalf("Record = %d, %v", n, err)
	}
	snaps, err := ReadSnapshots(&buf, "rec.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 || snaps[0].Task.Family != "prom-ecs-exporter-sandbox-main-ec2" || len(snaps[1].Stats) != 3 {
		t.Fatalf("read back %d snapshots: %+v", len(snaps), snaps)
	}
}

func TestReadSnapshotsErrors(t *testing.T) {
	good := `{"time":"2026-11-30T09:00:00Z","task":{"TaskARN":"arn:t"},"stats":{}}`
	for _, tt := range []struct {
		name, in, want string
	}{
		{"garbage", good + "\n{oops\n", "s.ndjson: line 2: invalid JSON"},
		{"wrong type", good + "\n" + `{"time":"2026-11-30T09:00:00Z","task":{"TaskARN":"arn:t","Revision":3},"stats":{}}`, "s.ndjson: line 2: field task.Revision"},
		{"no time", `{"task":{"TaskARN":"arn:t"},"stats":{}}`, "line 1: field time: missing"},
		{"no task", `{"time":"2026-11-30T09:00:00Z","stats":{}}`, "line 1: field task: missing"},
		{"no arn", `{"time":"2026-11-30T09:00:00Z","task":{},"stats":{}}`, "field task.TaskARN: missing"},
		{"no stats", `{"time":"2026-11-30T09:00:00Z","task":{"TaskARN":"arn:t"}}`, "field stats: missing"},
		{"bad time", good + "\n\n" + `{"time":"yesterday","task":{"TaskARN":"arn:t"},"stats":{}}`, "line 3: bad timestamp"},
		{"empty", "\n", "no snapshots"},
	} {
		_, err := ReadSnapshots(strings.NewReader(tt.in), "s.ndjson")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestRunsFromEnvelope(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	env := &envelope.Envelope{
		Provenance: envelope.Provenance{Sources: []figures.Source{{File: "a.json", Start: at, End: at.Add(time.Minute)}}},
		Runs:       []envelope.Run{{Run: figures.Run{Source: "a.json", Requests: 42}}},
	}
	runs, err := RunsFromEnvelope(env)
	if err != nil || len(runs) != 1 || runs[0].Requests != 42 || !runs[0].End.Equal(at.Add(time.Minute)) {
		t.Fatalf("RunsFromEnvelope = %+v, %v", runs, err)
	}
	env.Provenance.Sources[0].End = time.Time{}
	if _, err := RunsFromEnvelope(env); err == nil || !strings.Contains(err.Error(), "provenance.sources[0] (a.json") {
		t.Fatalf("missing end: err = %v", err)
	}
	// A summary-export envelope: the error says what to give instead.
	env.Provenance.Sources[0] = figures.Source{File: "a.json", Format: "summary-export"}
	_, err = RunsFromEnvelope(env)
	for _, want := range []string{"format summary-export", "--out json or csv", "envelope baseline --topology"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("summary-export sources: err = %v, want %q", err, want)
		}
	}
}
