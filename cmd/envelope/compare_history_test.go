package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// The real history fixture, judged as a user would judge it: an envelope
// from five clean runs (run-01..05), then three later runs compared
// together. Three runs after the upload step (document_upload ×1.2 from
// run-11) are a Regression, exit 1, with document_upload's median
// flagged and no figure of another endpoint; three clean runs
// (run-06..08) pass, exit 0; and three runs after the auth improvement
// (run-23..25, uploads still slower) flag the uploads and nothing else.
func TestCompareHistorySteps(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 14 real runs")
	}
	run := func(i int) string {
		return fixtures.Path(t, fmt.Sprintf("k6/history-v2.2.0/run-%02d.ndjson.gz", i))
	}
	dir := t.TempDir()
	envPath := filepath.Join(dir, "envelope.yaml")
	args := []string{"baseline", "--name", "history", "--out", envPath}
	for i := 1; i <= 5; i++ {
		args = append(args, run(i))
	}
	if code, so, se := cmpRun(t, args...); code != 0 {
		t.Fatalf("baseline: exit %d\n%s\n%s", code, so, se)
	}
	for _, tc := range []struct {
		name string
		runs []int
		code int
		want []string // lines of the figure table, by their start
	}{
		{"after the upload step", []int{11, 12, 13}, 1, []string{"document_upload median", "Result: REGRESSION"}},
		{"clean", []int{6, 7, 8}, 0, []string{"Result: no regression"}},
		{"after the auth improvement", []int{23, 24, 25}, 1, []string{"document_upload median", "Result: REGRESSION"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"compare", "--envelope", envPath}
			for _, i := range tc.runs {
				args = append(args, run(i))
			}
			code, so, se := cmpRun(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, so, se)
			}
			var regressed []string
			for _, line := range strings.Split(so, "\n") {
				if strings.HasSuffix(line, "Regression") {
					regressed = append(regressed, line)
				}
			}
			for _, w := range tc.want {
				found := strings.Contains(so, w)
				if strings.HasPrefix(w, "document_upload") {
					found = false
					for _, l := range regressed {
						found = found || strings.HasPrefix(l, w)
					}
				}
				if !found {
					t.Errorf("%q not flagged:\n%s", w, so)
				}
			}
			for _, l := range regressed {
				if !strings.HasPrefix(l, "document_upload ") || tc.code == 0 {
					t.Errorf("flagged %q:\n%s", l, so)
				}
			}
			t.Logf("\n%s", so)
		})
	}
}
