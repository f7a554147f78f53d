package cmdline

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"skip-warmup", "name", "match", "group-by", "format"}
	for in, want := range map[string]string{
		"skip-warmpu": "skip-warmup", "skip-wramup": "skip-warmup", "nme": "name", "grop-by": "group-by",
		"skip": "skip-warmup", "xyz": "", "formta": "format", "matchh": "match", "zzzzzz": "",
	} {
		if got := closest(in, names); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
}
