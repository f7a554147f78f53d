//go:build ignore

// Command measure times the commands' start and measures their memory,
// side by side: each round runs every binary once, so a busy moment of
// the machine falls on all of them alike. docs/benchmarks.md has its
// figures and the command that produced them.
//
//	go run docs/startup/measure.go [-runs 100] [-serve-runs 3] NAME=BINARY ...
//
// For each binary: its size; `--version` wall time (median of -runs) and
// peak RSS (median); and, for a binary whose NAME starts with "exporter",
// the VmRSS of an idle `serve` with the ECS collector on: the Fargate
// task metadata and stats captures served on loopback, six scrapes, then
// 5 s idle (median of -serve-runs).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

type binary struct{ name, path string }

func main() {
	runs := flag.Int("runs", 100, "--version runs per binary")
	serveRuns := flag.Int("serve-runs", 3, "idle serve runs per exporter binary")
	flag.Parse()
	var bins []binary
	for _, a := range flag.Args() {
		name, path, ok := strings.Cut(a, "=")
		if !ok {
			fail(fmt.Errorf("%q: want NAME=BINARY", a))
		}
		bins = append(bins, binary{name, path})
	}
	wall := map[string][]time.Duration{}
	rss := map[string][]int64{}
	for range *runs {
		for _, b := range bins {
			d, kb := version(b.path)
			wall[b.name] = append(wall[b.name], d)
			rss[b.name] = append(rss[b.name], kb)
		}
	}
	idle := map[string][]int64{}
	meta := metadataServer()
	defer meta.Close()
	for range *serveRuns {
		for _, b := range bins {
			if strings.HasPrefix(b.name, "exporter") {
				idle[b.name] = append(idle[b.name], idleServe(b.path, meta.URL))
			}
		}
	}
	fmt.Printf("| binary | size | `--version` median of %d | `--version` peak RSS, median | idle `serve`, ECS collector on, VmRSS, median of %d |\n| :-- | --: | --: | --: | --: |\n", *runs, *serveRuns)
	for _, b := range bins {
		fi, err := os.Stat(b.path)
		if err != nil {
			fail(err)
		}
		serve := ""
		if v := idle[b.name]; len(v) > 0 {
			serve = fmt.Sprintf("%.1f MiB", float64(median(v))/1024)
		}
		fmt.Printf("| %s | %.1f MB | %.1f ms | %.1f MiB | %s |\n", b.name, float64(fi.Size())/1e6,
			float64(median(wall[b.name]))/1e6, float64(median(rss[b.name]))/1024, serve)
	}
}

// version runs BINARY --version: wall time and peak RSS (KiB).
func version(path string) (time.Duration, int64) {
	cmd := exec.Command(path, "--version")
	cmd.Stdout = io.Discard
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fail(fmt.Errorf("%s --version: %w", path, err))
	}
	return time.Since(start), cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
}

// metadataServer serves the Fargate captures as the task metadata
// endpoint v4 does.
func metadataServer() *httptest.Server {
	dir := filepath.Join("internal", "ecs", "testdata", "fixtures")
	task, err := os.ReadFile(filepath.Join(dir, "fargate_task_metadata.json"))
	if err != nil {
		fail(fmt.Errorf("run from the repository's root: %w", err))
	}
	stats, err := os.ReadFile(filepath.Join(dir, "fargate_task_stats.json"))
	if err != nil {
		fail(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /task", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(task) })
	mux.HandleFunc("GET /task/stats", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(stats) })
	return httptest.NewServer(mux)
}

var listening = regexp.MustCompile(`msg="Listening on" address=(\S+)`)

// idleServe starts serve with the ECS collector on, scrapes it six
// times, lets it idle 5 s and returns its VmRSS (KiB).
func idleServe(path, metadataURL string) int64 {
	cmd := exec.Command(path, "serve", "--web.listen-address=127.0.0.1:0", "--ecs.metadata-uri="+metadataURL)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	var a string
	select {
	case a = <-addr:
	case <-time.After(30 * time.Second):
		fail(fmt.Errorf("%s serve: not listening after 30 s", path))
	}
	if _, _, err := net.SplitHostPort(a); err != nil {
		fail(err)
	}
	for range 6 {
		resp, err := http.Get("http://" + a + "/metrics")
		if err != nil {
			fail(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if !strings.Contains(string(body), "ecs_") {
			fail(fmt.Errorf("%s serve: no ECS series scraped", path))
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(5 * time.Second)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		fail(err)
	}
	var kb int64
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			_, _ = fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:")), "%d", &kb)
		}
	}
	return kb
}

func median[T int64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "measure:", err)
	os.Exit(1)
}
