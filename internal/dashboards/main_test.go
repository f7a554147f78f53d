package dashboards

import (
	"os"
	"testing"

	"github.com/envelope-dev/envelope/internal/pgtest"
	"github.com/envelope-dev/envelope/internal/promtest"
)

// The tools are built before the tests' timer starts (promtest.Build);
// the tests of the history dashboard's queries share one PostgreSQL
// (pgtest.Main stops it).
func TestMain(m *testing.M) {
	promtest.Build("prometheus")
	os.Exit(pgtest.Main(m))
}
