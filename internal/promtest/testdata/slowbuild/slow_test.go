// Package slowbuild is run by promtest's TestMainBuildOutsideTimeout:
// its tool build (a stand-in go command that takes longer than the test
// timeout) happens in TestMain, or, with SLOWBUILD_IN_TEST set, in the
// test itself.
package slowbuild

import (
	"context"
	"os"
	"testing"

	"github.com/envelope-dev/envelope/internal/promproc"
	"github.com/envelope-dev/envelope/internal/promtest"
)

func TestMain(m *testing.M) {
	if os.Getenv("SLOWBUILD_IN_TEST") != "" {
		os.Exit(m.Run())
	}
	os.Exit(promtest.Main(m, "promtool"))
}

func TestUsesTool(t *testing.T) {
	if _, err := promproc.GoTool(context.Background(), "promtool"); err != nil {
		t.Fatal(err)
	}
}
