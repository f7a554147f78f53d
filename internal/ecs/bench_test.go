package ecs

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

// BenchmarkScrape is one full scrape: two HTTP reads of the fixture
// endpoint, JSON decoding and exposition, as Prometheus sees it.
func BenchmarkScrape(b *testing.B) {
	for _, prefix := range []string{"fargate", "ec2"} {
		b.Run(prefix, func(b *testing.B) {
			srv := fixtureServer(b, prefix)
			c, err := NewClient(srv.URL, 0)
			if err != nil {
				b.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(NewCollector(c, nil))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCollectTask is the conversion alone, without HTTP or JSON.
func BenchmarkCollectTask(b *testing.B) {
	var task TaskMetadata
	var stats map[string]*ContainerStats
	if err := json.Unmarshal(readFile(b, filepath.Join("testdata", "fixtures", "fargate_task_metadata.json")), &task); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(readFile(b, filepath.Join("testdata", "fixtures", "fargate_task_stats.json")), &stats); err != nil {
		b.Fatal(err)
	}
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		collectTask(&task, stats, func(catalogue.Desc, float64, ...string) { n++ })
	}
	if n == 0 {
		b.Fatal("no samples")
	}
}
