package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Missing fails with CI=true and skips otherwise. The case runs in a
// child test process, since a failure there is the expected outcome.
func TestMissing(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Missing(t, "frobnicator", "install it")
		t.Fatal("Missing returned")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ci       string
		passes   bool
		mentions string
	}{
		{"true", false, "--- FAIL: TestMissing"},
		{"", true, "--- SKIP: TestMissing"},
		{"false", true, "--- SKIP: TestMissing"},
	} {
		cmd := exec.Command(exe, "-test.run=^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if passes := err == nil; passes != tc.passes {
			t.Errorf("CI=%q: passed %t, want %t:\n%s", tc.ci, passes, tc.passes, out)
		}
		for _, want := range []string{tc.mentions, "frobnicator is missing", "install it"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("CI=%q: output lacks %q:\n%s", tc.ci, want, out)
			}
		}
	}
}
