package main

import (
	"bytes"
	"io"
	"testing"
)

// captureRun runs the CLI with stdout and stderr captured.
func captureRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	return runCLI(args, &o, &e), o.String(), e.String()
}

// runCLI runs one invocation on a fresh app, as main does.
func runCLI(args []string, stdout, stderr io.Writer) int {
	return run(newApp(stdout, stderr), args, stderr)
}
