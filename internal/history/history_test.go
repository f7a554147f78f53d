package history

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/envelope-dev/envelope/internal/pgtest"
	"github.com/envelope-dev/envelope/internal/runstore"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if bigDSN != "" {
		_ = os.RemoveAll(filepath.Dir(bigDSN))
	}
	os.Exit(code)
}

// backends runs f against an SQLite file and a real PostgreSQL: one
// suite for both.
func backends(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { f(t, filepath.Join(t.TempDir(), "history.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.DSN(t)) })
}

func open(t *testing.T, dsn string) *runstore.Store {
	t.Helper()
	s, err := runstore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func add(t *testing.T, s *runstore.Store, recs []runstore.Record) {
	t.Helper()
	if _, err := s.Add(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}
