package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/exporter"
	"go.yaml.in/yaml/v3"
)

// walkthrough returns the README's "Your first real baseline" section.
func walkthrough(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Your first real baseline\n")
	if !ok {
		t.Fatal("README has no \"Your first real baseline\" section")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	return sec
}

// fenced returns the lines of the section's code blocks of a language.
func fenced(sec, lang string) [][]string {
	var blocks [][]string
	var cur []string
	in := false
	indent := ""
	for _, raw := range strings.Split(sec, "\n") {
		l := strings.TrimSpace(raw)
		switch {
		case !in && l == "```"+lang:
			in, cur = true, nil
			indent = raw[:len(raw)-len(strings.TrimLeft(raw, " "))] // a list item's block
		case in && l == "```":
			in = false
			blocks = append(blocks, cur)
		case in:
			cur = append(cur, strings.TrimPrefix(raw, indent))
		}
	}
	return blocks
}

// shellWords splits a command line as sh does for the plain words,
// quotes and trailing comments the README uses.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	have := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, have = r, true
		case r == '#' && !have:
			return words
		case r == ' ' || r == '\t':
			if have {
				words = append(words, w.String())
				w.Reset()
				have = false
			}
		case r == '|' || r == '>' || r == '<' || r == '*':
			t.Fatalf("README command %q needs a shell (%c): keep the walkthrough's commands plain", line, r)
		default:
			w.WriteRune(r)
			have = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if have {
		words = append(words, w.String())
	}
	return words
}

// The walkthrough runs as written: its k6 outputs are real 6-minute k6
// runs of the baseline-mix script from the fixtures (run-4, the later
// run, is the one with slower auth and failed uploads), and every
// envelope and exporter command runs in that folder with the exit code it
// should have.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("replays four 6-minute runs")
	}
	sec := walkthrough(t)
	abs := func(p ...string) string {
		a, err := filepath.Abs(filepath.Join(p...))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	f := sixMin(t)
	links := map[string]string{
		"run-1.ndjson.gz":        abs(f.A),
		"run-2.ndjson.gz":        abs(f.B),
		"run-3.ndjson.gz":        abs(f.C),
		"run-4.ndjson.gz":        abs(f.Regressed),
		"script.k6-inspect.json": abs(f.Options),
	}
	dir := t.TempDir()
	for name, src := range links {
		if err := os.Symlink(src, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)

	// Each line runs the command it names: envelope's in this process,
	// the exporter's as the built binary.
	var cmds [][]string
	for _, block := range fenced(sec, "sh") {
		for _, l := range block {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "envelope ") || strings.HasPrefix(l, "exporter ") {
				cmds = append(cmds, shellWords(t, l))
			}
		}
	}
	if len(cmds) < 6 {
		t.Fatalf("the walkthrough has %d envelope and exporter commands, want baseline, report, rules, serve, dashboards, compare", len(cmds))
	}
	ran := map[string]bool{}
	for _, words := range cmds {
		command, args := words[0], words[1:]
		ran[command+" "+args[0]] = true
		if command == "exporter" {
			if args[0] != "serve" {
				t.Fatalf("the walkthrough runs exporter %s; the exporter's step is serve", args[0])
			}
			readmeServe(t, buildExporter(t), args)
			continue
		}
		code, so, se := cmdlinetest.Capture(runCLI, args...)
		want := 0
		if args[0] == "compare" {
			want = 1 // run-4 regressed
		}
		if code != want {
			t.Fatalf("envelope %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, so, se)
		}
		if args[0] == "baseline" {
			readmeBaselineWarnings(t, args, se)
		}
		if args[0] == "compare" {
			readmeCompare(t, so)
		}
	}
	if b, err := os.ReadFile("report.md"); err != nil || strings.Contains(string(b), "### name=") {
		t.Errorf("the report lists an endpoint twice (or is missing: %v)", err)
	}
	for _, c := range []string{"envelope baseline", "envelope report", "envelope rules", "exporter serve", "envelope dashboards", "envelope compare"} {
		if !ran[c] {
			t.Errorf("the walkthrough does not run %s", c)
		}
	}
	for _, f := range []string{"envelope.yaml", "report.md", filepath.Join("rules", "envelope.rules.yaml"), filepath.Join("dashboards", "overview.json")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("walkthrough output: %v", err)
		}
	}
	blocks := fenced(sec, "yaml")
	if len(blocks) == 0 {
		t.Fatal("no scrape config in the walkthrough")
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(strings.Join(blocks[0], "\n")), &cfg); err != nil || len(cfg.ScrapeConfigs) == 0 || cfg.ScrapeConfigs[0].StaticConfigs[0].Targets[0] != "127.0.0.1:"+exporter.DefaultPort {
		t.Errorf("scrape config: %+v, %v", cfg, err)
	}
}

// readmeCompare holds the walkthrough's compare to its verdict: each
// endpoint once (the script's Trends and --group-by name hold the same
// samples): median, p95 and p99 of the 4 endpoints, none of them a name=
// copy, and auth_register's p95 a regression.
func readmeCompare(t *testing.T, stdout string) {
	t.Helper()
	if !strings.Contains(stdout, "Result: REGRESSION") {
		t.Errorf("compare: %s", stdout)
	}
	rows := regexp.MustCompile(`(?m)^(actor_get|auth_login|auth_register|document_upload) (median|p95|p99) `).FindAllString(stdout, -1)
	if len(rows) != 12 || strings.Contains(stdout, "name=") {
		t.Errorf("compare judged duplicated endpoints (%d endpoint rows, want 12):\n%s", len(rows), stdout)
	}
	if !regexp.MustCompile(`(?m)^auth_register p95 .*Regression$`).MatchString(stdout) {
		t.Errorf("compare: auth_register p95 is not a regression:\n%s", stdout)
	}
}

// readmeBaselineWarnings holds baseline to its one warning over the
// fixtures' runs, which, like most existing runs, carry no envelope tag:
// the walkthrough's match selects none of them, and baseline says so
// with the tag they do carry.
func readmeBaselineWarnings(t *testing.T, args []string, stderr string) {
	t.Helper()
	match := ""
	for i, a := range args {
		if a == "--match" && i+1 < len(args) {
			match = args[i+1]
		}
	}
	if match == "" {
		if strings.Contains(stderr, "level=WARN") {
			t.Errorf("baseline warned: %s", stderr)
		}
		return
	}
	var warns []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.Contains(l, "level=WARN") {
			warns = append(warns, l)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "selects none of the 3 runs") || !strings.Contains(warns[0], "testid (") {
		t.Errorf("baseline over untagged runs with --match %s: want one warning that it selects none of them, naming testid; got:\n%s", match, stderr)
	}
	if strings.Contains(stderr, "source=") {
		t.Errorf("baseline's warnings name source lines: %s", stderr)
	}
}

// exporterDir holds the exporter binary buildExporter builds; TestMain
// removes it.
var exporterDir string

// buildExporter builds the exporter command once per test binary, for
// the steps that run it.
var buildExporter = func() func(t *testing.T) string {
	var once sync.Once
	var bin string
	var err error
	var out []byte
	return func(t *testing.T) string {
		t.Helper()
		once.Do(func() {
			if exporterDir, err = os.MkdirTemp("", "envelope-test-exporter-"); err != nil {
				return
			}
			bin = filepath.Join(exporterDir, "exporter")
			cmd := exec.Command("go", "build", "-o", bin, ".")
			cmd.Dir = filepath.Join(moduleRoot, "cmd", "exporter")
			out, err = cmd.CombinedOutput()
		})
		if err != nil {
			t.Fatalf("go build ./cmd/exporter: %v\n%s", err, out)
		}
		return bin
	}
}()

// moduleRoot is the repository's root, from this package's folder.
var moduleRoot, _ = filepath.Abs(filepath.Join("..", ".."))

// readmeServe runs the walkthrough's serve command (the exporter binary)
// on a free loopback port until it has replayed its results, then stops
// it as Ctrl-C does.
func readmeServe(t *testing.T, bin string, args []string) {
	t.Helper()
	var e cmdlinetest.LockedBuffer
	cmd := exec.Command(bin, append(args, "--web.listen-address=127.0.0.1:0")...)
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	// The fixtures' runs carry no envelope tag: once replayed, serve
	// warns that the envelope's match selects none of their series.
	for !strings.Contains(e.String(), "replayed results") || !strings.Contains(e.String(), "selects none of the k6 series replayed") {
		select {
		case err := <-done:
			t.Fatalf("serve exited (%v) before replaying:\n%s", err, e.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("serve did not replay its results and warn about the envelope's match:\n%s", e.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v:\n%s", err, e.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("serve did not stop on SIGINT")
	}
}

// The README's "How data flows" table names every package folder, so a
// reader finds each from the folder names alone.
func TestReadmeFolders(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## How data flows\n")
	if !ok {
		t.Fatal("README has no \"How data flows\" section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	dirs, err := os.ReadDir(filepath.Join("..", "..", "internal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !strings.Contains(sec, "`internal/"+d.Name()+"/`") {
			t.Errorf("the README's \"How data flows\" table does not name internal/%s/", d.Name())
		}
	}
}

// A binary size in the README says which build it measures: a plain
// `go build` is about a third larger than the stripped image build, so a
// figure without its flags misleads whoever checks it.
func TestReadmeBinarySizesSayWhichBuild(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	n := 0
	for _, m := range regexp.MustCompile(`\d+\.\d MB`).FindAllStringIndex(s, -1) {
		before := s[max(0, m[0]-200):m[0]]
		if !strings.Contains(before, "build") && !strings.Contains(before, "binary") {
			continue // a data file's size
		}
		n++
		after := s[m[1]:min(len(s), m[1]+40)]
		if !strings.HasPrefix(after, " stripped") && !strings.HasPrefix(after, " from a plain `go build`") {
			t.Errorf("README: %q does not say which build it measures (stripped, or a plain go build)", s[max(0, m[0]-60):min(len(s), m[1]+40)])
		}
	}
	if n < 3 {
		t.Errorf("found %d binary sizes in the README, want the image's and the full build's", n)
	}
}

// The README's dashboards section counts and names the dashboards
// `envelope dashboards` writes.
func TestReadmeDashboardCount(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Grafana dashboards\n")
	if !ok {
		t.Fatal("README has no \"Grafana dashboards\" section")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	out := t.TempDir()
	code, so, se := cmdlinetest.Capture(runCLI, "dashboards", "--out", out)
	if code != 0 {
		t.Fatalf("envelope dashboards: exit %d\n%s%s", code, so, se)
	}
	var titles []string
	for _, p := range strings.Fields(so) {
		var d struct{ Title string }
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		titles = append(titles, strings.TrimPrefix(d.Title, "Envelope / "))
	}
	words := []string{"", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"}
	if len(titles) >= len(words) {
		t.Fatalf("%d dashboards: extend the number words", len(titles))
	}
	if first := strings.Fields(strings.TrimSpace(sec))[0]; first != words[len(titles)] {
		t.Errorf("README: %q dashboards, `envelope dashboards` writes %d: %v", first, len(titles), titles)
	}
	flat := strings.Join(strings.Fields(sec), " ")
	for _, title := range titles {
		if !strings.Contains(flat, title) {
			t.Errorf("README's dashboards section does not name %q", title)
		}
	}
}
