package report

import (
	"testing"

	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// Every tick label of every chart the envelope report draws reads as
// the value at its tick's position, in both themes: the demo envelope's
// charts, the same with its throughput moved in 0.01 req/s steps across
// a whole unit (so every axis offset gonum's ticks can take comes up,
// such as ticks at 54.95, 55.10, 55.25 that one decimal misreads), and a
// single run.
func TestEveryChartTickLabelReadsAsItsPosition(t *testing.T) {
	var envs []*envelope.Envelope
	base, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	envs = append(envs, base)
	for i := range 100 {
		env, err := demo.Envelope()
		if err != nil {
			t.Fatal(err)
		}
		d := -1.0 + 0.01*float64(i) // the demo's 56.x moved to 55.x
		for j := range env.Runs {
			env.Runs[j].RPS += d
		}
		tp := &env.Throughput
		tp.Mean, tp.Min, tp.Max, tp.CILow, tp.CIHigh = tp.Mean+d, tp.Min+d, tp.Max+d, tp.CILow+d, tp.CIHigh+d
		envs = append(envs, env)
	}
	in, err := demo.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	one, err := envelope.Compute(in[:1], envelope.Options{Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	envs = append(envs, one)
	var charts []chart.Chart
	for _, env := range envs {
		for _, c := range envChartList(env) {
			charts = append(charts, c.c)
		}
	}
	for _, c := range charts {
		if err := chart.CheckThemedTicks(c); err != nil {
			t.Error(err)
		}
	}
}
