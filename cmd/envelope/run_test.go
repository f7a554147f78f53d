package main

import (
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
)

// captureRun runs the command line with stdout and stderr captured.
func captureRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return cmdlinetest.Capture(runCLI, args...)
}
