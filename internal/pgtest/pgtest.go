// Package pgtest gives tests a real PostgreSQL server, Debian's
// `postgresql` package's binaries, started by the test binary itself:
// initdb in a temporary folder, its Unix socket there and a free port,
// run as an unprivileged user when the tests run as root (PostgreSQL
// refuses root). Each caller gets a fresh, empty database.
//
// Without the binaries, a test fails when CI=true and skips otherwise;
// Main then says once how to run them.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"

	"github.com/envelope-dev/envelope/internal/testenv"
)

// server is the test binary's PostgreSQL.
type server struct {
	dir, bin string
	port     int
	cred     *syscall.Credential
}

var (
	once     sync.Once
	srv      *server
	startErr error
	missing  atomic.Bool
	dbSeq    atomic.Int64
)

// errMissing says PostgreSQL is not installed.
var errMissing = errors.New("PostgreSQL is not installed: no initdb and pg_ctl in PATH or /usr/lib/postgresql/*/bin")

// hint is how to enable the PostgreSQL tests.
const hint = "install Debian's postgresql package (apt-get install postgresql) to run them, as CI does"

// DSN returns the URL of a fresh, empty database on the test binary's
// PostgreSQL server, starting the server on first use.
func DSN(tb testing.TB) string {
	tb.Helper()
	once.Do(func() { srv, startErr = start() })
	if errors.Is(startErr, errMissing) {
		if testenv.InCI() {
			tb.Fatalf("%v (CI=true: the PostgreSQL tests must run; %s)", startErr, hint)
		}
		missing.Store(true)
		tb.Skip("PostgreSQL not installed")
	}
	if startErr != nil {
		tb.Fatalf("starting PostgreSQL: %v", startErr)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	db, err := sql.Open("pgx", srv.url("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close() //nolint:errcheck // only created a database
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("creating database %s: %v", name, err)
	}
	return srv.url(name)
}

// Main runs a package's tests, stops the server after them, and says
// once when the PostgreSQL tests were skipped.
func Main(m *testing.M) int {
	code := m.Run()
	if srv != nil {
		srv.stop()
	}
	if missing.Load() {
		sayOnce(fmt.Sprintf("PostgreSQL tests skipped: %v; %s (or set %s to their folder)\n", errMissing, hint, EnvBin))
	}
	return code
}

// sayOnce tells the developer, once per `go test` run however many
// packages skipped (the packages' test binaries share the go command as
// their parent). `go test ./...` hides a passing package's output, so
// the terminal gets it when there is one.
func sayOnce(msg string) {
	marker := filepath.Join(os.TempDir(), fmt.Sprintf("envelope-pgtest-skipped-%d", os.Getppid()))
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return // another package of this run said it
	}
	_ = f.Close()
	out := io.Writer(os.Stderr)
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close() //nolint:errcheck // a message only
		out = tty
	}
	_, _ = io.WriteString(out, msg)
}

func (s *server) url(db string) string {
	return fmt.Sprintf("postgres://envelope@/%s?host=%s&port=%d&sslmode=disable", db, s.dir, s.port)
}

// EnvBin names a folder of PostgreSQL binaries to use instead of
// searching (a missing folder makes the server missing).
const EnvBin = "ENVELOPE_PG_BIN"

// binDir finds the PostgreSQL binaries: EnvBin, then PATH, then Debian's
// versioned folders, newest first.
func binDir() (string, error) {
	if dir := os.Getenv(EnvBin); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err != nil {
			return "", errMissing
		}
		return dir, nil
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Dir(real), nil
			}
		}
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	sort.Slice(m, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(m[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(m[j]))))
		return vi > vj
	})
	if len(m) > 0 {
		return filepath.Dir(m[0]), nil
	}
	return "", errMissing
}

// unprivileged is the user to run PostgreSQL as when the tests run as
// root: postgres when it exists, else nobody.
func unprivileged() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close() //nolint:errcheck // only asked for a port
	return l.Addr().(*net.TCPAddr).Port, nil
}

func start() (*server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := unprivileged()
	if err != nil {
		return nil, err
	}
	// As root, under /tmp itself: a $TMPDIR inside root's home would be
	// out of the unprivileged user's reach.
	base := ""
	if cred != nil {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "envelope-pg-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	s := &server{dir: dir, bin: bin, cred: cred}
	if out, err := s.cmd("initdb", "-D", filepath.Join(dir, "data"), "-U", "envelope", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	// A port taken between freePort and the start fails the start; try
	// a few.
	for range 5 {
		if s.port, err = freePort(); err != nil {
			break
		}
		opts := fmt.Sprintf("-k %s -p %d -h 127.0.0.1 -c fsync=off", dir, s.port)
		var out []byte
		out, err = s.cmd("pg_ctl", "-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start").CombinedOutput()
		if err == nil {
			return s, nil
		}
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		err = fmt.Errorf("pg_ctl start: %v: %s %s", err, out, lastLines(string(log), 5))
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

func (s *server) cmd(name string, args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(s.bin, name), args...)
	c.Dir = s.dir
	if s.cred != nil {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return c
}

func (s *server) stop() {
	_ = s.cmd("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop").Run()
	_ = os.RemoveAll(s.dir)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
