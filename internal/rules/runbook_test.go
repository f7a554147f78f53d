package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every alert the generator can emit, the ECS ones included, has its own
// section in docs/runbook.md, which is where its runbook_url points.
func TestEveryAlertHasARunbookSection(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			headings[strings.TrimSpace(h)] = true
		}
	}
	f, _, err := Generate(ecsEnvelope(t), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			seen++
			if !headings[r.Alert] {
				t.Errorf("alert %s has no \"## %s\" section in docs/runbook.md", r.Alert, r.Alert)
			}
		}
	}
	if seen == 0 {
		t.Fatal("generator emitted no alerts")
	}
}
