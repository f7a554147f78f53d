package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

// The report's details read unambiguously: bands say they are min /
// max, every spread has its unit, maxima read in one unit in the list and
// the table, and no figure is rounded twice.
func TestEnvelopeReportDetails(t *testing.T) {
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	md, err := EnvelopeMarkdown(env, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	for _, want := range []string{
		"- Median (min / max): 6.12 / 6.41 ms (mean of per-run medians 6.30 ms)",
		"| 0.14 req/s | 0.24% |",           // throughput std dev
		"std dev 0.21 iter/s",              // iteration rate std dev
		"- Max (min / max): 2.14 / 2.79 s", // the list in s ...
		"| 2.79 s | 1.11× |",               // ... and the table too
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(text, "| 2388 ms |") || strings.Contains(text, "2388") {
		t.Error("run-3's maximum 2387.496 ms (stored 2387.5) reads 2388")
	}
	for v, want := range map[float64]string{2387.5: "2387.5", 2387.4: "2387", 922.7: "922.7", 0.125: "0.125", 56.1: "56.10"} {
		if got := envFig(v); got != want {
			t.Errorf("envFig(%v) = %q, want %q", v, got, want)
		}
	}
}

// Runs are named by their testid when the files told it and it tells
// them apart; otherwise by file.
func TestEnvRunLabels(t *testing.T) {
	env := &envelope.Envelope{Runs: []envelope.Run{{Run: figures.Run{Source: "runs/a.ndjson.gz"}}, {Run: figures.Run{Source: "runs/b.ndjson.gz"}}}}
	env.Provenance.Sources = []figures.Source{{File: "runs/a.ndjson.gz", TestID: "baseline-a"}, {File: "runs/b.ndjson.gz", TestID: "baseline-b"}}
	if got := envRunLabels(env); !slices.Equal(got, []string{"baseline-a", "baseline-b"}) {
		t.Errorf("labels %q, want the testids", got)
	}
	env.Provenance.Sources[1].TestID = "baseline-a"
	if got := envRunLabels(env); !slices.Equal(got, []string{"a.ndjson", "b.ndjson"}) {
		t.Errorf("labels %q with one testid twice, want the files", got)
	}
}
