package ecs

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

// FuzzCollectTask decodes arbitrary /task and /task/stats bodies and turns
// them into series as a scrape does: no panic, and every sample it emits
// is a valid const metric (known series, right label count, valid UTF-8)
// with a finite value.
func FuzzCollectTask(f *testing.F) {
	for _, prefix := range []string{"ec2", "fargate"} {
		task, err := os.ReadFile(filepath.Join("testdata", "fixtures", prefix+"_task_metadata.json"))
		if err != nil {
			f.Fatal(err)
		}
		stats, err := os.ReadFile(filepath.Join("testdata", "fixtures", prefix+"_task_stats.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(task, stats)
	}
	f.Add([]byte(`{"Containers":[{"Name":"a","DockerId":"x","Limits":{"CPU":-1,"Memory":-5}}],"Limits":{"CPU":1e308}}`),
		[]byte(`{"x":{"read":"2026-11-30T08:00:00Z","memory_stats":{"usage":1,"stats":{"inactive_file":5}}},"y":null}`))
	descs := map[string]*prometheus.Desc{}
	kinds := map[string]prometheus.ValueType{}
	for _, d := range catalogue.ECSDescs() {
		descs[d.Name], kinds[d.Name] = newDesc(d), valueType(d)
	}
	f.Fuzz(func(t *testing.T, taskBody, statsBody []byte) {
		var task TaskMetadata
		if err := decodeJSON("/task", taskBody, &task); err != nil {
			return
		}
		var stats map[string]*ContainerStats
		if err := decodeJSON("/task/stats", statsBody, &stats); err != nil {
			return
		}
		collectTask(&task, stats, func(d catalogue.Desc, v float64, labels ...string) {
			desc, ok := descs[d.Name]
			if !ok {
				t.Fatalf("%s is not an ECS catalogue series", d.Name)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s%v: non-finite %v", d.Name, labels, v)
			}
			if _, err := prometheus.NewConstMetric(desc, kinds[d.Name], v, labels...); err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
		})
	})
}
