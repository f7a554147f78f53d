package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/ecs"
)

// `exporter ecs record` appends the task metadata endpoint's /task and
// /task/stats (the recorded Fargate captures) as snapshots that
// `envelope ecs operating-point` reads; a second run appends.
func TestECSRecord(t *testing.T) {
	dir := filepath.Join("..", "..", "internal", "ecs", "testdata", "fixtures")
	task, err := os.ReadFile(filepath.Join(dir, "fargate_task_metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	stats, err := os.ReadFile(filepath.Join(dir, "fargate_task_stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /task", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(task) })
	mux.HandleFunc("GET /task/stats", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(stats) })
	tmds := httptest.NewServer(mux)
	defer tmds.Close()

	out := filepath.Join(t.TempDir(), "snapshots.ndjson")
	for i, want := range []int{2, 3} {
		code, so, se := cmdlinetest.Capture(runCLI, "ecs", "record", "--ecs.metadata-uri", tmds.URL, "--out", out, "--interval", "10ms", "--count", []string{"2", "1"}[i])
		if code != 0 || !strings.HasPrefix(so, []string{"2", "1"}[i]+" snapshots appended to "+out) {
			t.Fatalf("run %d: exit %d, stdout %q, stderr %q", i+1, code, so, se)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		snaps, err := ecs.ReadSnapshots(f, out)
		_ = f.Close()
		if err != nil || len(snaps) != want {
			t.Fatalf("after run %d: %d snapshots (%v), want %d", i+1, len(snaps), err, want)
		}
		if s := snaps[len(snaps)-1]; s.Task == nil || !strings.Contains(s.Task.TaskARN, "task/") || len(s.Stats) == 0 {
			t.Errorf("snapshot lacks the task or its stats: %+v", s)
		}
	}
	// Without an endpoint it says how to give one.
	t.Setenv(ecs.EnvMetadataURI, "")
	if code, _, se := cmdlinetest.Capture(runCLI, "ecs", "record", "--out", out); code != 2 || !strings.Contains(se, "--ecs.metadata-uri") {
		t.Errorf("no endpoint: exit %d, stderr %q", code, se)
	}
}
