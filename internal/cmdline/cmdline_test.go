package cmdline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// failingWriter refuses every write, as a full disk or a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// runApp runs args on an app named t with one command, run, whose action
// prints "done" and returns actionErr.
func runApp(stdout io.Writer, actionErr error, args ...string) (int, string) {
	var e bytes.Buffer
	app, c := New("t", "A test app.", stdout, &e)
	cmd := app.Command("run", "Run.")
	cmd.Flag("name", "A name.").String()
	cmd.Flag("wait", "A duration.").Duration()
	cmd.Action(c.Action(func() error {
		c.Print("done")
		return actionErr
	}))
	return Run(app, args, &e), e.String()
}

// Every error an action returns exits with CodeError unless it carries
// another code; only kingpin's parse errors get the explainer's hints,
// and a missing file has one message whoever finds it.
func TestExitCodePolicy(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.json")
	_, openErr := os.Open(missing)
	for _, tc := range []struct {
		name       string
		args       []string
		actionErr  error
		code       int
		stderr     string
		wantStdout string
	}{
		{"success", []string{"run"}, nil, codeOK, "", "done"},
		{"an action's error", []string{"run"}, errors.New("bad input"), CodeError, "t: bad input\n", "done"},
		{"an action's wrapped error", []string{"run"}, fmt.Errorf("step: %w", errors.New("bad input")), CodeError, "t: step: bad input\n", "done"},
		{"a regression, already reported", []string{"run"}, WithCode(CodeRegression, nil), CodeRegression, "", "done"},
		{"an error with its own code", []string{"run"}, WithCode(CodeRegression, errors.New("regressed")), CodeRegression, "t: regressed\n", "done"},
		{"a wrapped error with its own code", []string{"run"}, fmt.Errorf("step: %w", WithCode(CodeRegression, errors.New("regressed"))), CodeRegression, "t: step: regressed\n", "done"},
		{"a missing file in an action", []string{"run"}, openErr, CodeError, "t: " + missing + ": no such file\n", "done"},
		// Worded as kingpin words a misspelt flag, an action's error is
		// still the action's: no hint is added.
		{"an action's error is not explained", []string{"run", "--name=x"}, errors.New("unknown long flag '--nme'"), CodeError, "t: unknown long flag '--nme'\n", "done"},
		{"a misspelt flag", []string{"run", "--nme=x"}, nil, CodeError, "t: unknown long flag '--nme'; did you mean --name?\n", ""},
		{"a misspelt command", []string{"rn"}, nil, CodeError, "t: expected command but got \"rn\"; did you mean \"run\"?\n", ""},
		{"a value that does not parse", []string{"run", "--wait", "3"}, nil, CodeError, "t: --wait \"3\": time: missing unit in duration \"3\" (give a unit: 3m, 90s, 1h)\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o bytes.Buffer
			code, se := runApp(&o, tc.actionErr, tc.args...)
			if code != tc.code || se != tc.stderr || o.String() != tc.wantStdout {
				t.Errorf("exit %d, stderr %q, stdout %q; want %d, %q, %q", code, se, o.String(), tc.code, tc.stderr, tc.wantStdout)
			}
		})
	}
}

// An action whose output could not be written fails with CodeError and
// the write's error; an error of its own is the one reported.
func TestActionOutputWriteFailure(t *testing.T) {
	code, se := runApp(failingWriter{}, nil, "run")
	if code != CodeError || se != "t: writing output: no space left on device\n" {
		t.Errorf("exit %d, stderr %q; want %d and the write error", code, se, CodeError)
	}
	code, se = runApp(failingWriter{}, errors.New("bad input"), "run")
	if code != CodeError || se != "t: bad input\n" {
		t.Errorf("exit %d, stderr %q; want %d and the action's error", code, se, CodeError)
	}
}
