package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/fixtures"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// `serve --k6.json -` reads stdin (kingpin hands a lone "-" over empty),
// replays --k6.results, and stops cleanly on SIGINT with exit code 0.
func TestServeStdinAndShutdown(t *testing.T) {
	var e cmdlinetest.LockedBuffer
	var o bytes.Buffer
	results := fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")
	code := make(chan int, 1)
	go func() {
		code <- runCLI([]string{"serve", "--web.listen-address=127.0.0.1:0", "--k6.json", "-", "--k6.results", results}, &o, &e)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(e.String(), "stdin closed") || !strings.Contains(e.String(), "replayed results") {
		if time.Now().After(deadline) {
			t.Fatalf("server did not read stdin and the results:\n%s", e.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(e.String(), "points=1966") {
		t.Errorf("replay log lacks the point count:\n%s", e.String())
	}
	interruptServe(t, code, &e)
}

func TestServeBadFlags(t *testing.T) {
	var o, e bytes.Buffer
	for _, args := range [][]string{
		{"serve", "--envelope", "no-such-envelope.yaml"},
		{"serve", "--k6.allow-tag", "bad-label"},
		{"serve", "--web.telemetry-path", "/v1/metrics"},
	} {
		e.Reset()
		if c := runCLI(args, &o, &e); c != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, c, e.String())
		}
	}
}

// --envelope takes files and folders; two envelopes of one name are
// refused with both files named.
func TestReadEnvelopes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	folder := filepath.Join(dir, "envelopes")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	second := strings.Replace(string(b), "name: ecs-native-50vu-baseline-mix\n", "name: phase3-100vu\nmatch: envelope=\"phase3-100vu\"\n", 1)
	for name, body := range map[string]string{
		filepath.Join(folder, "a.yaml"):  string(b),
		filepath.Join(folder, "b.yaml"):  second,
		filepath.Join(dir, "again.yaml"): string(b),
	} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	envs, err := readEnvelopes([]string{folder})
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 2 || envs[0].Name != "ecs-native-50vu-baseline-mix" || envs[1].Name != "phase3-100vu" || envs[1].Match != `envelope="phase3-100vu"` {
		t.Errorf("read %d envelopes: %+v", len(envs), envs)
	}
	_, err = readEnvelopes([]string{folder, filepath.Join(dir, "again.yaml")})
	if err == nil || !strings.Contains(err.Error(), "again.yaml") || !strings.Contains(err.Error(), "a.yaml") {
		t.Errorf("duplicate name: err = %v, want both files named", err)
	}
	if _, err := readEnvelopes([]string{t.TempDir()}); err == nil {
		t.Error("an empty folder was accepted")
	}
}

// serve --k6.results knows a file's format before replaying it: a summary
// file fails at once with one clear error and no line-by-line noise.
func TestServeResultsDetectsFormat(t *testing.T) {
	summary := fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-summary-export.json")
	code, _, se := cmdlinetest.Capture(runCLI, "serve", "--web.listen-address=127.0.0.1:0", "--k6.results", summary)
	if code != 2 || !strings.Contains(se, "a k6 summary file") || strings.Contains(se, "skipped") {
		t.Errorf("summary file: exit %d, stderr %q", code, se)
	}
	for _, ok := range []string{filepath.Join("..", "..", "testdata", "k6", "generated-v2.2.0", "runB-trendstats-vu-iter", "runB-out.ndjson.gz"), fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")} {
		if err := exporter.CheckReplayable(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	bad := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(bad, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := exporter.CheckReplayable(bad); err == nil || !strings.Contains(err.Error(), "notes.txt:1: not k6") {
		t.Errorf("text file: %v", err)
	}
}

// Usage errors say what the user most likely meant and whose value did
// not parse.
func TestUsageMessages(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ecs", "recrd"}, `did you mean "record"?`},
		{[]string{"serve", "--k6.series-limit", "many"}, `--k6.series-limit "many": `},
		{[]string{"srve"}, `expected command but got "srve"; did you mean "serve"?`},
		{[]string{"baseline"}, `expected command but got "baseline"`},
	} {
		code, _, se := cmdlinetest.Capture(runCLI, tc.args...)
		if code != cmdline.CodeError || !strings.HasPrefix(se, "exporter: ") || !strings.Contains(se, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, se, tc.want)
		}
	}
}

// The daemon's command line is serve and ecs record; help says where the
// offline commands are.
func TestDaemonCommands(t *testing.T) {
	code, out, _ := cmdlinetest.Capture(runCLI, "--help")
	if code != 0 || !strings.Contains(out, "usage: exporter") || !strings.Contains(out, "envelope command") {
		t.Fatalf("--help: exit %d:\n%s", code, out)
	}
	for _, c := range []string{"serve", "ecs record"} {
		if !strings.Contains(out, "\n"+c+" ") {
			t.Errorf("--help lacks %q:\n%s", c, out)
		}
	}
	for _, c := range []string{"baseline", "report", "compare", "rules", "dashboards", "summarize", "history", "demo", "stack", "ecs operating-point"} {
		if strings.Contains(out, "\n"+c+" ") || strings.Contains(out, "\n"+c+"\n") {
			t.Errorf("--help lists %s, an envelope command", c)
		}
	}
	if code, out, _ := cmdlinetest.Capture(runCLI, "--version"); code != 0 || !strings.HasPrefix(out, "exporter, version ") {
		t.Errorf("--version: exit %d: %s", code, out)
	}
}

// `serve --otlp.push-endpoint` pushes the replayed k6 series to an OTLP
// collector until interrupted.
func TestServePushesOTLP(t *testing.T) {
	names := make(chan []string, 16)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req colmetricpb.ExportMetricsServiceRequest
		if err != nil || r.URL.Path != "/v1/metrics" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var got []string
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					got = append(got, m.GetName())
				}
			}
		}
		select {
		case names <- got:
		default:
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	defer collector.Close()
	var e cmdlinetest.LockedBuffer
	var o bytes.Buffer
	results := fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson")
	code := make(chan int, 1)
	go func() {
		code <- runCLI([]string{"serve", "--web.listen-address=127.0.0.1:0", "--k6.results", results,
			"--otlp.push-endpoint", collector.URL, "--otlp.push-interval", "100ms"}, &o, &e)
	}()
	deadline := time.After(20 * time.Second)
	for pushed := false; !pushed; {
		select {
		case got := <-names:
			pushed = slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, "http_req_duration") })
		case c := <-code:
			t.Fatalf("serve exited %d:\n%s", c, e.String())
		case <-deadline:
			t.Fatalf("no push carried the replayed http_req_duration:\n%s", e.String())
		}
	}
	interruptServe(t, code, &e)
}

// interruptServe sends this process SIGINT and requires the serve
// running in it to end with exit code 0 within 20 s.
func interruptServe(t *testing.T, code <-chan int, log *cmdlinetest.LockedBuffer) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit code %d:\n%s", c, log.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
}
