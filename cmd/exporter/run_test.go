package main

import (
	"bytes"
	"testing"
)

// captureRun runs the CLI with stdout and stderr captured.
func captureRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	return runCLI(args, &o, &e), o.String(), e.String()
}
