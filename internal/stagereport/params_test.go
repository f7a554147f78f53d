package stagereport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --params carries what a benchmark report's header and sections hold:
// the max delay, the endpoints' order and free sections; bad shapes are
// refused with the file, line and field.
func TestLoadParamsHeaderAndSections(t *testing.T) {
	p, err := LoadParams("testdata/per-endpoint.params.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxDelay != "0ms" || strings.Join(p.Endpoints, ",") != "steady,adaptive,target-aware,standard" {
		t.Errorf("max delay %q, endpoints %v", p.MaxDelay, p.Endpoints)
	}
	if len(p.Sections) != 1 || p.Sections[0].Title != "Lambda Configuration" || !strings.Contains(p.Sections[0].Text, "not captured") {
		t.Errorf("sections %+v", p.Sections)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		{"sections:\n  Lambda:\n    a: b\n", "p.yaml:3: field sections.Lambda: want text or a list"},
		{"sections: [a]\n", "p.yaml:1: field sections: want a mapping"},
		{"endpoints: steady\n", "p.yaml:1: field endpoints: want a list"},
		{"max_delay: [1]\n", "p.yaml:1: field max_delay: want a single value"},
		{"colour: red\n", `p.yaml:1: unknown field "colour" (want title, region, mode, profile, max_delay, endpoints`},
	} {
		path := filepath.Join(dir, "p.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadParams(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
