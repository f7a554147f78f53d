//go:build serveonly

package main

import (
	"strings"
	"testing"
)

// The serve-only build has serve, ecs and summarize; every other
// command fails with where the full command line is, even when given
// flags only it would know.
func TestServeOnlyCommands(t *testing.T) {
	code, out, _ := captureRun(t, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, c := range []string{"serve", "ecs record", "summarize"} {
		if !strings.Contains(out, "\n"+c+" ") {
			t.Errorf("--help lacks %q:\n%s", c, out)
		}
	}
	for _, name := range fullOnlyCommands {
		if strings.Contains(out, "\n"+name+" ") || strings.Contains(out, "\n"+name+"\n") {
			t.Errorf("--help lists %s, which this build leaves out", name)
		}
		for _, args := range [][]string{{name}, {name, "--stages", "3m:50", "run.ndjson"}, {"--log.level", "debug", name, "x"}} {
			code, so, se := captureRun(t, args...)
			want := "exporter: " + name + " is not in this build: this is the serve-only binary"
			if code != codeError || !strings.HasPrefix(se, want) || !strings.Contains(se, "go install github.com/envelope-dev/envelope/cmd/exporter@latest") || so != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, so, se, want)
			}
		}
	}
	code, _, se := captureRun(t, "summarize", "--format", "json", "../../testdata/k6/generated-v2.2.0/runA-default/runA-out.ndjson")
	if code != 0 {
		t.Errorf("summarize exit %d: %s", code, se)
	}
}
