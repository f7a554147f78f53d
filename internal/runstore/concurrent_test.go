package runstore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// openAt opens a history migrated only up to version v.
func openAt(t *testing.T, d dialect, driverDSN, where string, v int) *Store {
	t.Helper()
	db, err := sql.Open(d.driver, driverDSN)
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{db: db, d: d, Where: where}
	if err := s.migrate(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConcurrentWriters has four writers, each with its own connection
// pool as separate CI jobs have, record at once, two of them the same
// runs: every distinct run lands, once, with all its figures.
func TestConcurrentWriters(t *testing.T) {
	in := readRuns(t, "k6/history-v2.2.0/run-*.summary.json")
	all := records(t, in)
	backends(t, func(t *testing.T, dsn string) {
		open(t, dsn) // created once, so the writers race on recording only
		batches := [][]Record{all[0:10], all[10:20], all[20:30], all[5:15]}
		var wg sync.WaitGroup
		errs := make(chan error, len(batches)*len(all))
		for _, b := range batches {
			wg.Go(func() {
				s, err := Open(context.Background(), dsn)
				if err != nil {
					errs <- err
					return
				}
				defer s.Close() //nolint:errcheck // test
				// One run per transaction, so the writers interleave.
				for _, r := range b {
					if _, err := s.Add(context.Background(), []Record{r}); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		checkConsistent(t, open(t, dsn), len(all[0].Figures), 30, 30)
	})
}

// checkConsistent checks that every run has all its figures (perRun)
// and that the history holds between lo and hi runs.
func checkConsistent(t *testing.T, s *Store, perRun, lo, hi int) {
	t.Helper()
	var runs, partial, orphans int
	db := s.DB()
	if err := db.QueryRow("SELECT COUNT(*) FROM runs").Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(s.d.rebind("SELECT COUNT(*) FROM (SELECT r.id FROM runs r LEFT JOIN figures f ON f.run_id = r.id GROUP BY r.id HAVING COUNT(f.run_id) <> ?) x"), perRun).Scan(&partial); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM figures f WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = f.run_id)").Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if runs < lo || runs > hi || partial != 0 || orphans != 0 {
		t.Errorf("%d runs (want %d–%d), %d without all %d figures, %d orphan figures", runs, lo, hi, partial, perRun, orphans)
	}
	if s.Backend() == "sqlite" {
		var ok string
		if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
			t.Errorf("integrity check: %q %v", ok, err)
		}
	}
}

// The killed writer: a child process of this test binary records until
// it is killed.
const (
	childDSN     = "HISTORY_TEST_WRITER_DSN"
	childFixture = "HISTORY_TEST_WRITER_RUN"
)

// recordForever records copies of one run, ten per transaction, each
// with its own content hash, until killed.
func recordForever(dsn string) int {
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	in, err := figures.ReadFiles([]string{os.Getenv(childFixture)}, figures.LoadOptions(0, ""))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rec, err := FromRun(in[0], Meta{Test: "history-shared"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for i := 0; ; i++ {
		batch := make([]Record, 10)
		for j := range batch {
			batch[j] = rec
			batch[j].SHA256 = fmt.Sprintf("%s-%d-%d", rec.SHA256, i, j)
		}
		if _, err := s.Add(ctx, batch); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
}

// TestKilledWriter kills a writer mid-record (SIGKILL, no clean-up):
// the history stays consistent, holds only whole batches, and takes
// the next record.
func TestKilledWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a writer process")
	}
	run := fixtures.Path(t, "k6/history-v2.2.0/run-01.summary.json")
	backends(t, func(t *testing.T, dsn string) {
		open(t, dsn)
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childDSN+"="+dsn, childFixture+"="+run)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s := open(t, dsn)
		deadline := time.Now().Add(30 * time.Second)
		for n := 0; n < 30; {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("the writer recorded %d runs in 30 s: %s", n, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
			_ = s.DB().QueryRow("SELECT COUNT(*) FROM runs").Scan(&n)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		in := readRuns(t, "k6/history-v2.2.0/run-01.summary.json")
		perRun := len(records(t, in)[0].Figures)
		checkConsistent(t, s, perRun, 30, 1<<30)
		var n int
		_ = s.DB().QueryRow("SELECT COUNT(*) FROM runs").Scan(&n)
		if n%10 != 0 {
			t.Errorf("%d runs: a batch of 10 was partly recorded", n)
		}
		after := add(t, s, records(t, readRuns(t, "k6/history-v2.2.0/run-02.summary.json")))
		if after[0].Existing {
			t.Error("a new run after the kill was reported existing")
		}
	})
}
