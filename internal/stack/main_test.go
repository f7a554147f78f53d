package stack

import (
	"os"
	"testing"

	"github.com/envelope-dev/envelope/internal/promtest"
)

// The tools are built before the tests' timer starts (promtest.Main).
func TestMain(m *testing.M) {
	os.Exit(promtest.Main(m, "prometheus", "promtool", "alertmanager", "amtool", "thanos"))
}
