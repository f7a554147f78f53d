package envelope

import (
	"fmt"
	"os"
	"testing"

	"github.com/envelope-dev/envelope/internal/figures"
)

// BenchmarkCompute derives the envelope of five loaded summary runs.
func BenchmarkCompute(b *testing.B) {
	in := inputs(threeRuns())
	in = append(in, inputs(threeRuns()[:2])...)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compute(in, Options{Force: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadAndCompute is `envelope baseline` on the five demo summary
// exports minus process start: read, hash, parse, compute, marshal YAML.
func BenchmarkReadAndCompute(b *testing.B) {
	var files []string
	for i := 1; i <= 5; i++ {
		files = append(files, fmt.Sprintf("../demo/runs/run-%d.json", i))
	}
	if _, err := os.Stat(files[0]); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		in, err := figures.ReadFiles(files, figures.LoadOptions(0, ""))
		if err != nil {
			b.Fatal(err)
		}
		env, err := Compute(in, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Marshal(env, YAML); err != nil {
			b.Fatal(err)
		}
	}
}
