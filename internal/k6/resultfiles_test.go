package k6

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A k6 output folder holds each run in several formats: with the default
// pattern each run counts once, by its point file; a pattern picks
// exactly what it matches.
func TestResultFilesOnePerRun(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"run-01.ndjson.gz", "run-01.summary.json", "run-01.handlesummary.json",
		"run-02.summary.json", "run-03.csv", "run-03.summary.json", "CHANGES.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{"*", []string{"run-01.ndjson.gz", "run-02.summary.json", "run-03.csv"}},
		{"", []string{"run-01.ndjson.gz", "run-02.summary.json", "run-03.csv"}},
		{"*.summary.json", []string{"run-01.summary.json", "run-02.summary.json", "run-03.summary.json"}},
	} {
		got, err := ResultFiles(dir, c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			got[i] = filepath.Base(got[i])
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("pattern %q: %v, want %v", c.pattern, got, c.want)
		}
	}
}
