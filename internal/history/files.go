package history

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
