package promproc

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// TestMain builds promtool and Thanos before the tests' timer starts (see
// promtest.Main, which cannot be imported here).
func TestMain(m *testing.M) {
	if err := BuildTools(context.Background(), "promtool", "thanos"); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(m.Run())
}
