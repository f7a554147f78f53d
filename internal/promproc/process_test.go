package promproc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Stop ends the whole process group, children included.
func TestProcessStop(t *testing.T) {
	// Become the subreaper of orphans, so the shell's child is reparented
	// to this test, which can then wait for it and see how it ended,
	// rather than guess from /proc while init may or may not reap it.
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", e)
	}
	dir := t.TempDir()
	// A shell that starts a child and waits: both must go.
	p, err := StartProcess("sleeper", "/bin/sh", []string{"-c", "sleep 60 & echo $! > child.pid; wait"}, dir, filepath.Join(dir, "log"), "")
	if err != nil {
		t.Fatal(err)
	}
	var child int
	for i := 0; i < 100 && child == 0; i++ {
		if b, err := os.ReadFile(filepath.Join(dir, "child.pid")); err == nil && len(bytes.TrimSpace(b)) > 0 {
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("child did not start")
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	// The orphaned child got the signal too: it ends killed by a signal.
	type result struct {
		ws  syscall.WaitStatus
		err error
	}
	res := make(chan result, 1)
	go func() {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(child, &ws, 0, nil)
		res <- result{ws, err}
	}()
	select {
	case r := <-res:
		if r.err != nil {
			t.Fatalf("wait for child %d: %v", child, r.err)
		}
		if !r.ws.Signaled() {
			t.Errorf("child %d ended with %v, want killed by a signal", child, r.ws)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("child %d still running 10s after Stop", child)
	}
}

// A process that exits before it is ready is reported with its log.
func TestWaitReadyExited(t *testing.T) {
	dir := t.TempDir()
	p, err := StartProcess("failing", "/bin/sh", []string{"-c", "echo bad config >&2; exit 3"}, dir, filepath.Join(dir, "failing.log"), "")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := FreeAddr()
	err = p.WaitReady(context.Background(), "http://"+addr+"/-/ready")
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "bad config") {
		t.Errorf("err = %v, want the exit and the log tail", err)
	}
}

func TestLocate(t *testing.T) {
	ctx := context.Background()
	if _, err := Locate(ctx, "prometheus", "/nonexistent/prometheus"); err == nil {
		t.Error("explicit missing path: no error")
	}
	if _, err := Locate(ctx, "no-such-tool-here", ""); err == nil || !strings.Contains(err.Error(), "no-such-tool-here") {
		t.Errorf("unknown tool: err = %v", err)
	}
	if p, err := Locate(ctx, "sh", ""); err != nil || !strings.HasSuffix(p, "/sh") {
		t.Errorf("sh on PATH: %q, %v", p, err)
	}
}

func TestToolModule(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	am := filepath.Join(root, "tools", "alertmanager")
	thanos := filepath.Join(root, "tools", "thanos")
	for name, want := range map[string]string{
		"prometheus":   root,
		"promtool":     root,
		"kustomize":    root, // sigs.k8s.io/kustomize/kustomize/v5
		"alertmanager": am,
		"amtool":       am,
		"thanos":       thanos,
		"v5":           "",
		"":             "",
		"no-such-tool": "",
	} {
		got, pkg, ok := toolModule(root, name)
		if got != want || ok != (want != "") || (ok && toolName(pkg) != name) {
			t.Errorf("toolModule(%q) = %q, %q, %t; want %q", name, got, pkg, ok, want)
		}
	}
	names, err := Tools()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"prometheus", "promtool", "kustomize", "alertmanager", "amtool", "thanos"}; !slices.Equal(names, want) {
		t.Errorf("Tools() = %q, want %q", names, want)
	}
	if _, err := GoTool(context.Background(), "no-such-tool"); err == nil || !strings.Contains(err.Error(), "not a tool") {
		t.Errorf("GoTool(no-such-tool) = %v, want not a tool", err)
	}
	if err := BuildTools(context.Background(), "no-such-tool"); err == nil || !strings.Contains(err.Error(), "no-such-tool: no-such-tool is not a tool") {
		t.Errorf("BuildTools(no-such-tool) = %v, want not a tool", err)
	}
}

func TestToolName(t *testing.T) {
	for pkg, want := range map[string]string{
		"github.com/prometheus/prometheus/cmd/promtool": "promtool",
		"sigs.k8s.io/kustomize/kustomize/v5":            "kustomize",
		"example.com/tool/v2x":                          "v2x",
		"example.com/tool/v":                            "v",
		"v2":                                            "v2",
	} {
		if got := toolName(pkg); got != want {
			t.Errorf("toolName(%q) = %q, want %q", pkg, got, want)
		}
	}
}

// Concurrent callers share one build, and the remembered path serves
// later callers without the go command (here: with no go on $PATH).
func TestGoToolSharedAndRemembered(t *testing.T) {
	if testing.Short() {
		t.Skip("builds promtool")
	}
	t.Setenv("ENVELOPE_TOOL_CACHE", t.TempDir())
	paths := make(chan string, 2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			p, err := GoTool(t.Context(), "promtool")
			paths <- p
			errs <- err
		}()
	}
	a, b := <-paths, <-paths
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if a == "" || a != b {
		t.Fatalf("paths %q and %q", a, b)
	}
	t.Setenv("PATH", "")
	c, err := GoTool(t.Context(), "promtool")
	if err != nil || c != a {
		t.Fatalf("remembered path: %q, %v; want %q", c, err, a)
	}
}

// A child started with Command is killed when its context ends.
func TestCommandContextKillsGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Command(ctx, "/bin/sh", "-c", "sleep 60 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Wait returned nil; want the error of a killed child")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not killed 10s after cancel")
	}
}

// The promtool GoTool builds has the service discovery of toolTags: it
// checks the AWS discovery deploy/ecs/prometheus.yml uses and file
// discovery, and refuses Azure, GCE and Consul discovery as unknown
// fields, which promtool built without the tags (as `go tool` builds it,
// ignoring tags even in $GOFLAGS) accepts.
func TestPromtoolBuildTags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds promtool")
	}
	bin, err := GoTool(t.Context(), "promtool")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		sd    string
		known bool
	}{
		{"aws_sd_configs: [{region: eu-west-1, role: ecs, port: 9466}]", true},
		{"file_sd_configs: [{files: [targets.json]}]", true},
		{"static_configs: [{targets: ['127.0.0.1:9466']}]", true},
		{"azure_sd_configs: [{subscription_id: s, tenant_id: t, client_id: c, client_secret: x}]", false},
		{"gce_sd_configs: [{project: p, zone: z}]", false},
		{"consul_sd_configs: [{server: 'localhost:8500'}]", false},
	} {
		cfg := filepath.Join(dir, "prometheus.yml")
		if err := os.WriteFile(cfg, []byte("scrape_configs:\n  - job_name: j\n    "+tc.sd+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := Command(t.Context(), bin, "check", "config", "--syntax-only", cfg).CombinedOutput()
		if known := err == nil; known != tc.known {
			t.Errorf("promtool check config with %s: accepted %t, want %t:\n%s", tc.sd, known, tc.known, out)
		}
		if field, _, _ := strings.Cut(tc.sd, ":"); !tc.known && !bytes.Contains(out, []byte(field)) {
			t.Errorf("promtool check config with %s: the error does not name %s:\n%s", tc.sd, field, out)
		}
	}
}

// Thanos reads labels over gRPC into labels.Labels in place, which needs
// the slicelabels layout: the binary must record that tag.
func TestThanosBuildTags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Thanos")
	}
	bin, err := GoTool(t.Context(), "thanos")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m %s: %v\n%s", bin, err, out)
	}
	if !regexp.MustCompile(`(?m)^\s+build\s+-tags=(\S+,)?slicelabels(,\S+)?$`).Match(out) {
		t.Errorf("the Thanos binary was built without the slicelabels tag:\n%s", out)
	}
}

// A change of toolTags changes the folder of remembered binaries, so a
// binary built with other tags is never reused.
func TestToolCacheDirKeyedByTags(t *testing.T) {
	t.Setenv("ENVELOPE_TOOL_CACHE", t.TempDir())
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	before, err := toolCacheDir(root)
	if err != nil {
		t.Fatal(err)
	}
	saved := toolTags
	t.Cleanup(func() { toolTags = saved })
	toolTags = map[string]string{"prometheus": "remove_all_sd,enable_kubernetes_sd", "promtool": saved["promtool"]}
	after, err := toolCacheDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if before == after {
		t.Errorf("toolCacheDir = %s with either tags", before)
	}
}

// The first build of a tool names a binary that outlives the go command:
// a tool whose binary is in no build cache yet (its source holds a fresh
// nonce) is built, found and run.
func TestGoToolFirstBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a small tool")
	}
	dir := t.TempDir()
	nonce := strconv.FormatInt(time.Now().UnixNano(), 10)
	for name, body := range map[string]string{
		"go.mod":            "module example.com/firstbuild\n\ngo 1.26\n\ntool example.com/firstbuild/cmd/hello\n",
		"go.sum":            "",
		"cmd/hello/main.go": "package main\n\nfunc main() { println(\"" + nonce + "\") }\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	t.Setenv("ENVELOPE_TOOL_CACHE", t.TempDir())
	bin, err := GoTool(t.Context(), "hello")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != nonce {
		t.Errorf("%s: %q, %v; want %s", bin, out, err, nonce)
	}
}
