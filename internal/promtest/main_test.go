package promtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A tool build in TestMain (promtest.Main) does not count against the
// test binary's timeout; the same build inside a test does. A stand-in go
// command that takes 4 s to "build" promtool plays a cold build cache,
// against a 2 s timeout.
func TestMainBuildOutsideTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a test binary and waits on a slow stand-in build")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "slowbuild.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./testdata/slowbuild")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	fake := filepath.Join(dir, "bin")
	if err := os.MkdirAll(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(dir, "promtool")
	script := "#!/bin/sh\nsleep 4\necho " + tool + "\n"
	for name, body := range map[string]string{filepath.Join(fake, "go"): script, tool: "#!/bin/sh\n"} {
		if err := os.WriteFile(name, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		env    []string
		passes bool
	}{
		{"in TestMain", nil, true},
		{"in the test", []string{"SLOWBUILD_IN_TEST=1"}, false},
	} {
		cmd := exec.Command(bin, "-test.timeout=2s")
		cmd.Dir = filepath.Join("testdata", "slowbuild")
		cmd.Env = append(os.Environ(), append(tc.env, "PATH="+fake+":/bin:/usr/bin", "ENVELOPE_TOOL_CACHE="+t.TempDir())...)
		out, err := cmd.CombinedOutput()
		if passes := err == nil; passes != tc.passes {
			t.Errorf("build %s: passed %t, want %t:\n%s", tc.name, passes, tc.passes, out)
		}
		if !tc.passes && !strings.Contains(string(out), "test timed out after 2s") {
			t.Errorf("build %s: want the timeout panic:\n%s", tc.name, out)
		}
	}
}
