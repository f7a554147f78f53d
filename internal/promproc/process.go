// Package promproc starts and stops the Prometheus-ecosystem processes
// the project runs (Prometheus, Alertmanager), finds their binaries (on
// $PATH or as the module's `go tool` copies) and reads Prometheus's HTTP
// API. `exporter stack` and the end-to-end tests share it.
package promproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// aliases are other names distributions install a tool under (Debian's
// prometheus-alertmanager package installs /usr/bin/prometheus-alertmanager).
var aliases = map[string][]string{"alertmanager": {"prometheus-alertmanager"}}

// Locate finds the binary of a tool: the explicit path when given, else
// name (or a distribution's name for it) on $PATH, else the module's `go tool` copy (go.mod's tool
// directive), found by walking up from the working directory to go.mod.
// It returns the path to execute.
func Locate(ctx context.Context, name, explicit string) (string, error) {
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return p, nil
	}
	for _, n := range append([]string{name}, aliases[name]...) {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	p, err := GoTool(ctx, name)
	if err != nil {
		return "", fmt.Errorf("%s: not on $PATH and %w; pass its path with --%s.path", name, err, name)
	}
	return p, nil
}

// GoTool builds (if needed) the module's own copy of a tool named in
// go.mod's tool directive and returns the path of its binary. Tests use
// it rather than Locate so that they run the pinned Prometheus version,
// not whatever $PATH holds.
func GoTool(ctx context.Context, name string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("no go command to build it")
	}
	// `go tool -n` builds the tool if needed and prints the cached binary,
	// so the process we start and stop is the tool itself, not `go`.
	cmd := exec.CommandContext(ctx, gobin, "tool", "-n", name)
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool -n %s in %s: %v: %s", name, root, err, strings.TrimSpace(stderr.String()))
	}
	p := strings.TrimSpace(string(out))
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("go tool -n %s printed %q: %w", name, p, err)
	}
	return p, nil
}

// ModuleRoot returns the folder of the go.mod above the working directory
// that lists tools (this module's source tree).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "\ntool") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the envelope source tree (no go.mod with a tool directive)")
		}
		dir = parent
	}
}

// Process is a child process started by the stack, in its own process
// group so that stopping it stops anything it started.
type Process struct {
	Name string
	URL  string // base URL, http://host:port
	Log  string // file receiving its stdout and stderr

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess starts bin with args, output appended to logPath.
func StartProcess(name, bin string, args []string, dir, logPath, url string) (*Process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Process{Name: name, URL: url, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop sends SIGTERM to the process group, waits up to grace, then kills
// the group. It returns nil once the process is gone.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit", p.Name, pgid)
	}
}

// WaitReady polls url until it answers 200, the process exits, or ctx
// ends.
func (p *Process) WaitReady(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w (log: %s)", p.Name, url, ctx.Err(), p.Log)
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready: %v (log: %s)%s", p.Name, p.err, p.Log, tail(p.Log))
		case <-t.C:
		}
	}
}

// tail returns the last lines of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "\n\t" + strings.Join(lines, "\n\t")
}

// FreeAddr returns a loopback address with a port free at the time of the
// call.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
