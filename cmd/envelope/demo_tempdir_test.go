package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
)

// A demo without --out writes into a temporary folder and removes it when
// it ends, saying so and how to keep the files; with --out the folder is
// kept (TestDemoNoServe reads it afterwards).
func TestDemoRemovesTemporaryFolder(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, so, se := cmdlinetest.Capture(runCLI, "demo", "--no-serve")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, so, se)
	}
	checkDemoFolderRemoved(t, tmp, so)
}

// Interrupted while serving, the demo says what happened (the binary
// exits 0; go run reports 1 for any interrupted program) and still
// removes its temporary folder.
func TestDemoInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo as a process and interrupts it")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "envelope")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(bin, "demo", "--web.listen-address", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	serving := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "serving the demo envelopes") {
				close(serving)
			}
		}
	}()
	select {
	case <-serving:
	case <-done:
		t.Fatalf("the demo ended before serving:\n%s", out.String())
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the demo did not start serving within 3 minutes")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := cmd.Wait(); err != nil {
		t.Errorf("interrupted demo: %v, want exit 0", err)
	}
	if !strings.Contains(out.String(), "interrupted: the demo stopped serving and exits 0 (under go run, go reports exit status 1") {
		t.Errorf("stdout does not say it was interrupted:\n%s", out.String())
	}
	checkDemoFolderRemoved(t, tmp, out.String())
}

// checkDemoFolderRemoved checks that the demo wrote into a temporary
// folder under tmp, which is gone, and said so.
func checkDemoFolderRemoved(t *testing.T, tmp, stdout string) {
	t.Helper()
	first, _, _ := strings.Cut(stdout, "\n")
	dir, ok := strings.CutPrefix(first, "demo output folder: ")
	dir, _, _ = strings.Cut(dir, " ")
	if !ok || filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), "envelope-demo-") {
		t.Fatalf("first line %q names no temporary folder in %s", first, tmp)
	}
	if !strings.Contains(first, "--out DIR keeps the files") {
		t.Errorf("first line %q does not say how to keep the files", first)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "envelope-demo-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if want := "removed the demo's temporary folder " + dir + " (keep the files with --out DIR)\n"; !strings.HasSuffix(stdout, want) {
		t.Errorf("stdout does not end with %q:\n%s", want, stdout[max(0, len(stdout)-400):])
	}
}
