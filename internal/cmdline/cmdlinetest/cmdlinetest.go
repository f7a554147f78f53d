// Package cmdlinetest holds what the tests of both commands use to run
// them: an invocation with its output captured, and a log buffer a
// process writes while the test reads it.
package cmdlinetest

import (
	"bytes"
	"io"
	"sync"
)

// Capture runs one invocation of a command's runCLI with stdout and
// stderr captured: its exit code, stdout and stderr.
func Capture(run func(args []string, stdout, stderr io.Writer) int, args ...string) (int, string, string) {
	var o, e bytes.Buffer
	return run(args, &o, &e), o.String(), e.String()
}

// LockedBuffer is a log target written by a server's or a process's
// goroutines while the test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
