package k6

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// resultExts are the names k6 gives its result files, each possibly
// gzipped: summaries and --out json (.json, .ndjson), --out csv (.csv).
var resultExts = []string{".json", ".ndjson", ".jsonl", ".csv"}

// ResultFiles lists the k6 result files of dir whose names match
// pattern (a filepath.Match pattern; "" matches all), sorted by name.
// Other files are left out.
//
// With the default pattern, the files of one run count once: k6 writes a
// run's summary, handleSummary data and point file side by side, and
// recording each would record the run three times (their contents
// differ). Files sharing a name up to its first dot (run-01.ndjson.gz,
// run-01.summary.json) are one run, and its point file is kept (NDJSON,
// then CSV): it carries k6's tags (testid, commit, envelope) and every
// sample. A pattern picks exactly the files it matches.
func ResultFiles(dir, pattern string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if pattern == "" {
		pattern = "*"
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("--pattern %q: %w", pattern, err)
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		if ok, _ := filepath.Match(pattern, name); !ok || !isResultName(name) {
			continue
		}
		out = append(out, filepath.Join(dir, name))
	}
	sort.Strings(out)
	if pattern == "*" {
		out = onePerRun(out)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no k6 result file (*.json, *.ndjson, *.csv, gzipped or not) matching %q", dir, pattern)
	}
	return out, nil
}

func isResultName(name string) bool {
	name = strings.TrimSuffix(strings.ToLower(name), ".gz")
	for _, e := range resultExts {
		if strings.HasSuffix(name, e) {
			return true
		}
	}
	return false
}

// onePerRun keeps, of the files sharing a name up to its first dot, the
// best record of the run: NDJSON, then CSV, then a summary. names is
// sorted and stays so.
func onePerRun(names []string) []string {
	best := map[string]string{}
	for _, n := range names {
		stem, _, _ := strings.Cut(filepath.Base(n), ".")
		if b, ok := best[stem]; !ok || runFileRank(n) < runFileRank(b) {
			best[stem] = n
		}
	}
	out := names[:0]
	for _, n := range names {
		stem, _, _ := strings.Cut(filepath.Base(n), ".")
		if best[stem] == n {
			out = append(out, n)
		}
	}
	return out
}

// runFileRank orders a run's files by what they hold: points and tags
// first.
func runFileRank(name string) int {
	name = strings.TrimSuffix(strings.ToLower(name), ".gz")
	switch {
	case strings.HasSuffix(name, ".ndjson"), strings.HasSuffix(name, ".jsonl"):
		return 0
	case strings.HasSuffix(name, ".csv"):
		return 1
	}
	return 2
}
