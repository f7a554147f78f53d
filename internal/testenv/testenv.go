// Package testenv holds the one rule for a test that needs something the
// machine may lack (a program, a server, a kernel feature): in CI
// (CI=true) the test fails, because CI must run it; elsewhere it skips
// with one message saying what is missing and how to get it.
package testenv

import (
	"os"
	"testing"
)

// InCI reports whether the tests run in CI (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing stops a test that needs what: it fails in CI and skips
// elsewhere, saying what is missing and how to get it (hint).
func Missing(tb testing.TB, what, hint string) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("%s is missing (CI=true: this test must run; %s)", what, hint)
	}
	tb.Skipf("%s is missing; %s", what, hint)
}
