// Package promtest runs the module's own Prometheus and promtool (go.mod's
// tool directive) for tests: Start brings up a Prometheus with a given
// configuration and rule files on a free loopback port and stops it when
// the test ends; Promtool runs a promtool subcommand from the module root.
// It sits on promproc, which `envelope stack` uses to run the same
// processes.
package promtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/promproc"
)

// Main runs the tests of a package that use the module's Prometheus or
// promtool, after building the named tools (once for all packages, under
// promproc's lock): call it as os.Exit(promtest.Main(m, "prometheus")) in
// TestMain. The test binary's timeout (10 minutes by default) starts in
// m.Run, so the build, minutes on a cold cache of a busy small machine,
// or the wait for another package building it, counts against no test.
// `go test` still stops a binary one minute after its timeout, whatever
// it was doing. A failed build is left to the tests that ask for the tool
// (which fail, or skip where allowed).
func Main(m *testing.M, tools ...string) int {
	Build(tools...)
	return m.Run()
}

// Build builds the tools as Main does, for a TestMain that runs its
// tests another way (with a PostgreSQL of its own, say).
func Build(tools ...string) {
	if err := promproc.BuildTools(context.Background(), tools...); err != nil {
		fmt.Fprintf(os.Stderr, "promtest: %v\n", err)
	}
}

// Options configure Start.
type Options struct {
	// Config is the content of prometheus.yml. Rule files it names are
	// resolved against the folder Files are written to.
	Config string
	// Files are written beside prometheus.yml before start, by name
	// (rule files, typically).
	Files map[string][]byte
	// Flags are extra command-line flags, e.g.
	// --enable-feature=created-timestamp-zero-ingestion.
	Flags []string
	// Agent starts Prometheus in agent mode (scrape and remote_write
	// only; its storage flag differs).
	Agent bool
	// Ready bounds the wait for /-/ready once the binary is built;
	// zero means one minute.
	Ready time.Duration
}

// Prometheus is a running Prometheus owned by a test.
type Prometheus struct {
	URL string // http://127.0.0.1:port
	Dir string // holds prometheus.yml, the Files and the TSDB

	proc *promproc.Process
}

// Start builds (first time only, slowly; see promproc.GoTool) and starts
// the module's Prometheus
// with o, waits until it is ready and registers its stop with t.Cleanup.
// On a test failure the tail of its log is logged. Start fails the test
// when Prometheus cannot start.
func Start(t testing.TB, o Options) *Prometheus {
	t.Helper()
	bin, err := promproc.GoTool(context.Background(), "prometheus")
	if err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	dir := t.TempDir()
	for name, b := range o.Files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(o.Config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	storage := "--storage.tsdb.path="
	if o.Agent {
		storage = "--storage.agent.path="
	}
	args := []string{
		"--config.file=" + cfg,
		storage + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}
	if o.Agent {
		args = append(args, "--agent")
	}
	args = append(args, o.Flags...)
	logPath := filepath.Join(dir, "prometheus.log")
	p := &Prometheus{URL: "http://" + addr, Dir: dir}
	p.proc, err = promproc.StartProcess("prometheus", bin, args, dir, logPath, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.proc.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("prometheus output:\n%s", b)
			}
		}
	})
	ready := o.Ready
	if ready == 0 {
		ready = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), ready)
	defer cancel()
	if err := p.proc.WaitReady(ctx, p.URL+"/-/ready"); err != nil {
		t.Fatal(err)
	}
	return p
}

// Query runs an instant query now; see promproc.Query.
func (p *Prometheus) Query(expr string) ([]promproc.Sample, error) {
	return promproc.Query(context.Background(), p.URL, expr, time.Time{})
}

// Alerts returns the pending and firing alerts.
func (p *Prometheus) Alerts() ([]promproc.Alert, error) {
	return promproc.Alerts(context.Background(), p.URL)
}

// Promtool runs the module's promtool (go.mod's tool directive) with args
// from the module root (so relative paths in args are relative to it)
// and returns its combined output.
func Promtool(t testing.TB, args ...string) ([]byte, error) {
	t.Helper()
	return Tool(t, "promtool", args...)
}

// PromtoolCmd is the promtool command for args, to run from the module
// root, for callers that set its input; see ToolCmd.
func PromtoolCmd(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	return ToolCmd(t, "promtool", args...)
}

// Tool runs one of the module's tools (promtool, amtool, kustomize: see
// promproc.GoTool) with args from the module root and returns its
// combined output.
func Tool(t testing.TB, name string, args ...string) ([]byte, error) {
	t.Helper()
	out, err := ToolCmd(t, name, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %v: %w", name, args, err)
	}
	return out, nil
}

// ToolCmd is the command running one of the module's tools with args
// from the module root. The binary is built once for all test packages
// (see promproc.GoTool) and started directly, never through `go tool`,
// so it ends with the test, never outlives it. A tool that cannot be
// built fails the test.
func ToolCmd(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := promproc.GoTool(t.Context(), name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	root, err := promproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := promproc.Command(t.Context(), bin, args...)
	cmd.Dir = root
	return cmd
}

// FreeAddr returns a loopback host:port free at the time of the call.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := promproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
