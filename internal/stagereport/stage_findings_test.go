package stagereport

import (
	"strings"
	"testing"
)

// In the real fixture every /missing request is a 404 answered in under a
// millisecond; the fastest-p95 finding must name an endpoint that served
// requests, not the one that failed them all.
func TestFastestP95SkipsAllFailedEndpoints(t *testing.T) {
	r, _ := runAReport(t)
	var fastest string
	for _, f := range r.Findings {
		if strings.HasPrefix(f, "Fastest p95") {
			fastest = f
		}
	}
	if !strings.Contains(fastest, "**home**") || strings.Contains(fastest, "missing") {
		t.Fatalf("fastest p95 finding %q, want home (missing failed every request)", fastest)
	}
	// The ranking follows the same rule: the finding's endpoint first, the
	// one that failed every request last, and the report states the rule.
	if got := r.Ranking[0].Name; !strings.Contains(fastest, "**"+got+"**") {
		t.Errorf("ranking puts %s first, the finding names %q", got, fastest)
	}
	if last := r.Ranking[len(r.Ranking)-1]; last.Name != "missing" {
		t.Errorf("ranking puts %s last, want missing", last.Name)
	}
	var md strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), RankingRule) {
		t.Error("the report does not state its ranking rule")
	}
}
