// Package promproc starts and stops the Prometheus-ecosystem processes
// the project runs (Prometheus, Alertmanager), finds their binaries (on
// $PATH or as the module's `go tool` copies) and reads Prometheus's HTTP
// API. `envelope stack` and the end-to-end tests share it.
package promproc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
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
// go.mod's tool directive, with the build tags toolTags gives it, and
// returns the path of its binary. Tests use it rather than Locate so that
// they run the pinned Prometheus version, not whatever $PATH holds.
//
// Every test package of a `go test ./...` run asks for the same tools at
// about the same time; compiled side by side on a small machine, each
// copy of Prometheus takes long enough to hit the test timeout. So one
// process builds a module's tools while the others wait on that module's
// file lock, and the binary's path is remembered in a cache folder keyed
// by go.mod, go.sum, the Go version and the tags, so later runs start it
// without calling go at all. The lock is per module: tools of one module
// share most of their packages (Prometheus and promtool), so one build at
// a time compiles each once, while a tool of another module
// (Alertmanager, minutes on a cold cache) never holds up the promtool a
// package waits for.
func GoTool(ctx context.Context, name string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	mod, pkg, ok := toolModule(root, name)
	if !ok {
		return "", fmt.Errorf("%s is not a tool in %s or %s", name, filepath.Join(root, "go.mod"), filepath.Join(root, "tools", "*", "go.mod"))
	}
	dir, err := toolCacheDir(root)
	if err != nil {
		return "", err
	}
	memo := filepath.Join(dir, name+".path")
	if p, ok := readMemo(memo); ok {
		return p, nil
	}
	lock := "lock"
	if mod != root {
		lock += "-" + filepath.Base(mod)
	}
	unlock, err := lockFile(filepath.Join(dir, lock), name)
	if err != nil {
		return "", err
	}
	defer unlock()
	if p, ok := readMemo(memo); ok { // built by the process we waited for
		return p, nil
	}
	args := buildArgs(name, pkg)
	fmt.Fprintf(os.Stderr, "promproc: building %s from go.mod's tool directive (go %s in %s); the first run on a cold build cache takes minutes, later runs reuse it\n", name, strings.Join(args, " "), mod)
	start := time.Now()
	p, err := goToolPath(ctx, mod, args)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "promproc: %s ready after %s: %s\n", name, time.Since(start).Round(time.Second), p)
	if err := os.WriteFile(memo+".tmp", []byte(p), 0o644); err == nil {
		_ = os.Rename(memo+".tmp", memo)
	}
	return p, nil
}

// toolTags are the build tags of the copy of a tool that GoTool builds,
// by tool name; tools not listed are built as `go tool` builds them.
//
// Prometheus and promtool link every service-discovery plugin (the
// Kubernetes client, the AWS, Azure and GCE SDKs and twenty more), most
// of their cold build. Prometheus's remove_all_sd tag keeps only file
// and HTTP discovery, and enable_<name>_sd adds one plugin back. The
// tests and `envelope stack` run Prometheus on configs with
// static_configs only; promtool also checks deploy/ecs/prometheus.yml,
// which discovers the ECS tasks with aws_sd_configs, so it keeps AWS (and
// links the Kubernetes client whatever the tags: its own commands use
// Kubernetes discovery). Without the plugins, a cold build took 0.36× the
// CPU time for Prometheus and 0.70× for promtool (docs/builds.md).
//
// Thanos converts its protobuf labels to Prometheus's labels.Labels in
// place, which holds only for the slice layout of labels.Labels; since
// Prometheus v3 the default layout is one string, so Thanos's releases are
// built with the slicelabels tag (its .promu.yml), and a build without it
// panics on the first series it reads over gRPC.
var toolTags = map[string]string{
	"prometheus": "remove_all_sd",
	"promtool":   "remove_all_sd,enable_aws_sd",
	"thanos":     "slicelabels",
}

// buildArgs are the go command's arguments that build the tool name
// (package pkg) and print its binary's path: `go run` builds as `go tool`
// does (no debug information, the binary kept in Go's build cache) and
// also takes build tags, which `go tool` ignores even in $GOFLAGS; its
// -exec program, echo, receives the binary's path instead of running it.
func buildArgs(name, pkg string) []string {
	args := []string{"run", "-exec=echo"}
	if tags := toolTags[name]; tags != "" {
		args = append(args, "-tags="+tags)
	}
	return append(args, pkg)
}

// BuildTools builds each named tool (GoTool) and returns the errors.
// Test packages call it from TestMain, before their tests' timer
// starts (see promtest.Main). Tools of different modules are built side
// by side, each module's in the order given: a package that needs
// Alertmanager builds it while another package holds the lock of the
// Prometheus module, rather than after its turn there.
func BuildTools(ctx context.Context, names ...string) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	byMod := map[string][]string{}
	var mods []string
	for _, n := range names {
		mod, _, _ := toolModule(root, n) // GoTool reports a name that is no tool
		if _, ok := byMod[mod]; !ok {
			mods = append(mods, mod)
		}
		byMod[mod] = append(byMod[mod], n)
	}
	errs := make([]error, len(mods))
	var wg sync.WaitGroup
	for i, mod := range mods {
		wg.Go(func() {
			for _, n := range byMod[mod] {
				if _, err := GoTool(ctx, n); err != nil {
					errs[i] = fmt.Errorf("%s: %w", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// toolModules are the folders whose go.mod's tool directive may name a
// tool: the module root, then each tools/<name> module, which holds tools
// whose dependencies cannot share the project's (its go.mod says why).
func toolModules(root string) []string {
	mods, _ := filepath.Glob(filepath.Join(root, "tools", "*", "go.mod")) // the pattern is valid
	dirs := []string{root}
	for _, m := range mods {
		dirs = append(dirs, filepath.Dir(m))
	}
	return dirs
}

// toolModule returns the first of toolModules whose go.mod lists name,
// and the package it names.
func toolModule(root, name string) (dir, pkg string, ok bool) {
	for _, dir := range toolModules(root) {
		for _, pkg := range toolPackages(dir) {
			if toolName(pkg) == name {
				return dir, pkg, true
			}
		}
	}
	return "", "", false
}

// Tools returns the names of every tool in the tool directives of the
// source tree's go.mod files (toolModules), in their order.
func Tools() ([]string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, dir := range toolModules(root) {
		for _, pkg := range toolPackages(dir) {
			names = append(names, toolName(pkg))
		}
	}
	return names, nil
}

// toolPackages returns the packages named by the tool directives of the
// go.mod in dir.
func toolPackages(dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil
	}
	var pkgs []string
	in := false
	for l := range strings.Lines(string(b)) {
		f := strings.Fields(l)
		switch {
		case len(f) == 0:
		case f[0] == "tool" && len(f) > 1 && f[1] == "(":
			in = true
		case f[0] == "tool" && len(f) == 2:
			pkgs = append(pkgs, f[1])
		case in && f[0] == ")":
			in = false
		case in && !strings.HasPrefix(f[0], "//"):
			pkgs = append(pkgs, f[0])
		}
	}
	return pkgs
}

// toolName is the name `go tool` runs a package by: its last path
// element, or the one before a major version suffix
// (sigs.k8s.io/kustomize/kustomize/v5 is kustomize).
func toolName(pkg string) string {
	base := path.Base(pkg)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" && path.Dir(pkg) != "." {
		return path.Base(path.Dir(pkg))
	}
	return base
}

// goToolPath runs go with args (buildArgs) in the module folder mod,
// which builds the tool if needed and prints its binary in Go's build
// cache, so the process a test starts and stops is the tool itself, not
// `go`. The run that builds the binary prints the copy in its own work
// folder, which it removes when it exits (it stores the binary in the
// cache too, but names that copy only once it is there, to the next run),
// so a path that is gone is asked for once more. The go command dies with
// the caller (Pdeathsig) and with ctx (its whole process group).
func goToolPath(ctx context.Context, mod string, args []string) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("no go command to build it")
	}
	var p string
	for range 2 {
		cmd := Command(ctx, gobin, args...)
		cmd.Dir = mod
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go %s in %s: %v: %s", strings.Join(args, " "), mod, err, strings.TrimSpace(stderr.String()))
		}
		p = strings.TrimSpace(string(out))
		if _, err = os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("go %s printed %q, which is gone (is Go's build cache off?)", strings.Join(args, " "), p)
}

// Command is exec.CommandContext for a child that must not outlive its
// caller: it runs in its own process group, which ctx's end kills, and
// the kernel kills it if the caller dies first (a test binary panicking
// at its timeout, say), so no orphan keeps running.
func Command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// toolCacheDir is the folder holding the tool paths of this source tree's
// tool modules (their go.mod and go.sum) under this Go version, $GOFLAGS
// and toolTags: $ENVELOPE_TOOL_CACHE, else the user's cache folder.
func toolCacheDir(root string) (string, error) {
	base := os.Getenv("ENVELOPE_TOOL_CACHE")
	if base == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			c = os.TempDir()
		}
		base = filepath.Join(c, "envelope-tools")
	}
	h := sha256.New()
	for _, dir := range toolModules(root) {
		for _, f := range []string{"go.mod", "go.sum"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				return "", err
			}
			h.Write(b)
		}
	}
	// go run applies $GOFLAGS' build flags, and a changed tag must not
	// reuse a binary built without it.
	_, _ = fmt.Fprintf(h, "%s %s/%s %s", runtime.Version(), runtime.GOOS, runtime.GOARCH, os.Getenv("GOFLAGS")) // hash writes cannot fail
	for _, name := range slices.Sorted(maps.Keys(toolTags)) {
		_, _ = fmt.Fprintf(h, " %s:%s", name, toolTags[name])
	}
	dir := filepath.Join(base, hex.EncodeToString(h.Sum(nil))[:16])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// readMemo returns the remembered binary path if the binary still exists
// (a trimmed build cache may have removed it).
func readMemo(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	p := strings.TrimSpace(string(b))
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		return "", false
	}
	return p, true
}

// lockFile takes an exclusive lock on path, saying so when another
// process holds it. The kernel releases it if this process dies.
func lockFile(path, name string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "promproc: waiting for another test process building %s (lock %s)\n", name, path)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			_ = f.Close() // a lock file: nothing written
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close() // a lock file: nothing written
	}, nil
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
	// Its own group, so Stop ends anything it started; killed by the
	// kernel if this process dies without calling Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close() // the child never ran; the start error is the one to report
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Process{Name: name, URL: url, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close() // the child wrote through its own copy of the descriptor
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
			_ = resp.Body.Close()
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
	defer l.Close() //nolint:errcheck // only probes for a free port
	return l.Addr().String(), nil
}
