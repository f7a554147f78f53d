package report

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// realEnvelope is the envelope of real k6 runs, read as `envelope
// baseline` reads them; force accepts runs of different workloads.
func realEnvelope(t *testing.T, force bool, paths ...string) (*envelope.Envelope, string) {
	t.Helper()
	in, err := figures.ReadFiles(paths, figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compute(in, envelope.Options{Name: "real", Force: force})
	if err != nil {
		t.Fatal(err)
	}
	md, err := EnvelopeMarkdown(env, nil)
	if err != nil {
		t.Fatal(err)
	}
	return env, string(md)
}

// plansRow is the runs plan's row of a figure, its cells.
func plansRow(t *testing.T, md, fig string) []string {
	t.Helper()
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| "+fig+" | ") && strings.Count(l, "|") == 7 {
			return strings.Split(strings.Trim(l, "| "), " | ")
		}
	}
	t.Fatalf("no runs plan row for %s in:\n%s", fig, md)
	return nil
}

// "Beyond sampling" says why it is missing where it is, by what the runs
// were read from: the three real baselines' point streams give every
// figure's interval; with one of them read from its summary, the column
// is taken from the other two and the summary is named; with summaries
// only, it is n/a and says so.
func TestRealBeyondSampling(t *testing.T) {
	const dir = "k6/baseline-mix-v2.2.0/"
	ndjson := fixtures.Baselines(t)
	sum := func(id string) string { return fixtures.Path(t, dir+"baseline-"+id+".summary.json") }
	cases := []struct {
		name  string
		paths []string
		cell  string   // the median's cell: its value's suffix, or "n/a"
		named []string // what the note says of runs without an interval; nil: no note
	}{
		{"point streams", ndjson, "%", nil},
		{"one summary", []string{ndjson[0], ndjson[1], sum("c")}, "% (2 of 3 runs' intervals)", []string{"`baseline-c.summary` is a k6 summary file"}},
		{"summaries", []string{sum("a"), sum("b"), sum("c")}, "n/a", []string{"`baseline-a.summary`, `baseline-b.summary` and `baseline-c.summary` are k6 summary files"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, md := realEnvelope(t, false, tc.paths...)
			for _, fig := range []string{"median", "p95", "p99"} {
				cell := plansRow(t, md, fig)[2]
				if tc.cell == "n/a" && cell != "n/a" || tc.cell != "n/a" && (!strings.HasSuffix(cell, tc.cell) || strings.HasPrefix(cell, "n/a")) {
					t.Errorf("%s: beyond sampling %q, want …%q", fig, cell, tc.cell)
				}
			}
			if strings.Contains(md, "n/a for summary files") {
				t.Error("the note blames summary files whatever the runs were read from")
			}
			if tc.named == nil && strings.Contains(md, "Without an interval") {
				t.Errorf("every run keeps its intervals, yet the note says some do not")
			}
			for _, want := range tc.named {
				if !strings.Contains(md, "Without an interval of the `median`, `p95` and `p99`: "+want) {
					t.Errorf("the note does not say %q", want)
				}
			}
		})
	}
}

// An envelope file written before runs' intervals were kept has none for
// runs read from point streams: the note says so rather than blaming
// summary files.
func TestRealBeyondSamplingOlderFile(t *testing.T) {
	env, _ := realEnvelope(t, false, fixtures.Baselines(t)...)
	for i := range env.Runs {
		env.Runs[i].MedianCI, env.Runs[i].P95CI, env.Runs[i].P99CI = nil, nil, nil
	}
	b, err := EnvelopeMarkdown(env, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	if cell := plansRow(t, md, "median")[2]; cell != "n/a" {
		t.Errorf("median beyond sampling %q without intervals, want n/a", cell)
	}
	if want := "the envelope file keeps no interval for `baseline-a`, `baseline-b` and `baseline-c`, read from point streams"; !strings.Contains(md, want) || strings.Contains(md, "summary file") {
		t.Errorf("the note does not say %q, or blames summary files", want)
	}
}

// A run's max is its slowest request, above its p99 by nature: on the
// real baselines, whose maxima are alike (3.0–3.5 s), none is an
// outlier, and the table gives each max over the other runs' largest.
func TestRealMaximaNotAllOutliers(t *testing.T) {
	env, md := realEnvelope(t, false, fixtures.Baselines(t)...)
	labels := envRunLabels(env)
	for i, r := range env.Runs {
		others := 0.0
		for j, o := range env.Runs {
			if j != i {
				others = max(others, o.Max)
			}
		}
		row := ""
		for _, l := range strings.Split(md, "\n") {
			if strings.HasPrefix(l, "| "+labels[i]+" | ") && strings.HasSuffix(l, "× |") {
				row = l
			}
		}
		if want := fmt.Sprintf(" | %.2f× |", r.Max/others); !strings.HasSuffix(row, want) {
			t.Errorf("%s: row %q, want it to end %q", labels[i], row, want)
		}
	}
	if strings.Contains(md, "outlier)") || !strings.Contains(md, "No run's max is.") {
		t.Errorf("a real run's max marked an outlier:\n%s", md)
	}
}

// The Sources table gives the k6 version where the file does, says "not
// in the file" where it does not, and the line under it says which k6
// wrote which runs: k6 v2.2.0's point streams and legacy summaries carry
// none, its machine-readable summary does.
func TestRealK6Version(t *testing.T) {
	_, md := realEnvelope(t, false, fixtures.Baselines(t)...)
	for _, f := range []string{"baseline-a", "baseline-b", "baseline-c"} {
		if !strings.Contains(md, "| `"+f+".ndjson.gz` | ndjson | not in the file |") {
			t.Errorf("%s: no row saying the file has no version", f)
		}
	}
	if strings.Contains(md, "unknown") || !strings.Contains(md, "None of these files gives the k6 version") {
		t.Errorf("point streams: the version reads unknown, or the report does not say no file gives it")
	}
	// The machine-readable summary of a real k6 v2.2.0 run, kept with
	// the loader's fixtures, beside a legacy summary export.
	mr := filepath.Join("..", "k6", "testdata", "runC-summary-export-machine-readable.json")
	_, md = realEnvelope(t, true, mr, fixtures.Path(t, "k6/baseline-mix-v2.2.0/baseline-a.summary.json"))
	for _, want := range []string{
		"| `" + mr + "` | machine-readable | 2.2.0 |",
		"| `baseline-a.summary.json` | summary-export | not in the file |",
		"Written by k6 2.2.0 (`" + mr + "`). `baseline-a.summary.json` does not give a version.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
