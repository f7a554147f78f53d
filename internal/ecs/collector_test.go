package ecs

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/envelope-dev/envelope/internal/promtest"
)

var update = flag.Bool("update", false, "rewrite the golden exposition files in testdata/snapshots")

// fixtureServer serves a recorded /task and /task/stats pair the way TMDS
// does.
func fixtureServer(t testing.TB, prefix string) *httptest.Server {
	t.Helper()
	task := readFile(t, filepath.Join("testdata", "fixtures", prefix+"_task_metadata.json"))
	stats := readFile(t, filepath.Join("testdata", "fixtures", prefix+"_task_stats.json"))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /task", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(task) })
	mux.HandleFunc("GET /task/stats", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(stats) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newTestCollector(t *testing.T, url string, timeout time.Duration) prometheus.Collector {
	t.Helper()
	c, err := NewClient(url, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return NewCollector(c, nil)
}

// render writes the collector's exposition with the duration series
// removed: it is the only value that changes between runs.
func render(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	return promtest.Exposition(t, c, "ecs_scrape_duration_seconds")
}

func TestGolden(t *testing.T) {
	for _, prefix := range []string{"fargate", "ec2"} {
		t.Run(prefix, func(t *testing.T) {
			c := newTestCollector(t, fixtureServer(t, prefix).URL, 0)
			golden := filepath.Join("testdata", "snapshots", prefix+"_metrics.txt")
			if *update {
				if err := os.WriteFile(golden, render(t, c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			names := familyNames(t, golden)
			if err := testutil.CollectAndCompare(c, bytes.NewReader(readFile(t, golden)), names...); err != nil {
				t.Fatalf("%v\n(rerun with -update if the change is intended)", err)
			}
			problems, err := testutil.CollectAndLint(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
		})
	}
}

// familyNames lists the families in a golden file; CollectAndCompare
// then ignores ecs_scrape_duration_seconds, whose value varies.
func familyNames(t *testing.T, path string) []string {
	t.Helper()
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, path)))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			names = append(names, f[2])
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s: no metric families", path)
	}
	return names
}

// TestEcsExporterCompatible checks that every series ecs_exporter v0.4
// renders from the same fixtures exists here with the same labels and
// value, so its dashboards keep working. The one intended difference is
// bridge-mode networking, where ecs_exporter keeps only the last
// container's eth0 and this collector keeps each container's.
func TestEcsExporterCompatible(t *testing.T) {
	for _, prefix := range []string{"fargate", "ec2"} {
		t.Run(prefix, func(t *testing.T) {
			want := parseSamples(t, readFile(t, filepath.Join("testdata", "ecs_exporter", prefix+"_metrics.txt")))
			got := parseSamples(t, render(t, newTestCollector(t, fixtureServer(t, prefix).URL, 0)))
			checked := 0
			for key, v := range want {
				if prefix == "ec2" && strings.HasPrefix(key, "ecs_network_") {
					continue
				}
				if strings.HasPrefix(key, "ecs_task_metadata_info") {
					// This collector adds labels; each of ecs_exporter's
					// must be there with the same value.
					if !infoCovers(got, key) {
						t.Errorf("no ecs_task_metadata_info carries all of %s", key)
					}
					continue
				}
				if strings.HasPrefix(key, "ecs_container_memory_page_cache_size_bytes") && prefix == "ec2" {
					// ecs_exporter reads only cgroup v1's cache and
					// reports 0 on v2; this collector reports file.
					if got[key] == 0 {
						t.Errorf("%s: page cache on cgroup v2 should come from file, got 0", key)
					}
					continue
				}
				g, ok := got[key]
				if !ok {
					t.Errorf("missing series %s", key)
					continue
				}
				if g != v {
					t.Errorf("%s = %v, ecs_exporter has %v", key, g, v)
				}
				checked++
			}
			if checked < 8 {
				t.Fatalf("only %d series compared", checked)
			}
		})
	}
}

// parseSamples maps "name{sorted non-empty labels}" to value.
func parseSamples(t *testing.T, text []byte) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[sampleKey(name, m)] = sampleValue(m)
		}
	}
	return out
}

func sampleKey(name string, m *dto.Metric) string {
	var pairs []string
	for _, lp := range m.GetLabel() {
		if lp.GetValue() != "" { // empty labels are absent once ingested
			pairs = append(pairs, lp.GetName()+"="+lp.GetValue())
		}
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	default:
		return m.Untyped.GetValue()
	}
}

// TestTraps pins the behaviour on each ECS trap the fixtures cover.
func TestTraps(t *testing.T) {
	fargate := parseSamples(t, render(t, newTestCollector(t, fixtureServer(t, "fargate").URL, 0)))
	ec2 := parseSamples(t, render(t, newTestCollector(t, fixtureServer(t, "ec2").URL, 0)))
	tests := []struct {
		name   string
		got    map[string]float64
		key    string
		want   float64
		absent bool
	}{
		// Fargate's container memory_stats.limit is 9.2e18; the task limit is used.
		{"fargate limit is the task limit", fargate, "ecs_container_memory_limit_bytes{container_name=prometheus}", 512 << 20, false},
		// cgroup v1 working set: usage - total_inactive_file.
		{"fargate working set v1", fargate, "ecs_container_memory_working_set_bytes{container_name=prometheus}", 127934464 - 52383744, false},
		// cgroup v2 working set: usage - inactive_file.
		{"ec2 working set v2", ec2, "ecs_container_memory_working_set_bytes{container_name=ecs-exporter}", 65249280 - 17641472, false},
		{"ec2 page cache v2 is file", ec2, "ecs_container_memory_page_cache_size_bytes{container_name=ecs-exporter}", 25296896, false},
		// Lowercase blkio op names on cgroup v2.
		{"ec2 blkio read lowercase", ec2, "ecs_container_blkio_read_bytes_total{container_name=ecs-exporter}", 60960768, false},
		{"ec2 blkio write lowercase", ec2, "ecs_container_blkio_write_bytes_total{container_name=ecs-exporter}", 57344, false},
		// Capitalised ops summed over both devices on v1.
		{"fargate blkio read v1", fargate, "ecs_container_blkio_read_bytes_total{container_name=prometheus}", 23793664 + 65409024, false},
		{"ec2 pids", ec2, "ecs_container_pids{container_name=ecs-exporter}", 33, false},
		// Bridge mode keeps both containers' eth0.
		{"ec2 bridge eth0 exporter", ec2, "ecs_network_receive_bytes_total{container_name=ecs-exporter,interface=eth0}", 101869, false},
		{"ec2 bridge eth0 prometheus", ec2, "ecs_network_receive_bytes_total{container_name=prometheus,interface=eth0}", 45368, false},
		// awsvpc: one series per interface, the freshest reading.
		{"fargate awsvpc eth1 deduplicated", fargate, "ecs_network_receive_bytes_total{interface=eth1}", 129046293, false},
		// Stopped container: no stats series, but its exit code and info.
		{"stopped has no cpu", fargate, "ecs_container_cpu_usage_seconds_total{container_name=nonessential}", 0, true},
		{"stopped exit code", fargate, "ecs_container_exit_code{container_name=nonessential}", 0, false},
		{"ec2 stopped ({} stats) has no memory", ec2, "ecs_container_memory_usage_bytes{container_name=nonessential}", 0, true},
		// EC2 without task Limits: no task limit series; container limit from its own Limits.
		{"ec2 no task cpu limit", ec2, "ecs_task_cpu_limit_vcpus{}", 0, true},
		{"ec2 container cpu units", ec2, "ecs_container_cpu_limit_vcpus{container_name=prometheus}", 128.0 / 1024, false},
		{"ec2 container memory limit", ec2, "ecs_container_memory_limit_bytes{container_name=prometheus}", 256 << 20, false},
		{"fargate up", fargate, "ecs_up{}", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := tt.got[tt.key]
			if tt.absent {
				if ok {
					t.Fatalf("%s present (%v), want absent", tt.key, v)
				}
				return
			}
			if !ok {
				t.Fatalf("%s missing", tt.key)
			}
			if v != tt.want {
				t.Fatalf("%s = %v, want %v", tt.key, v, tt.want)
			}
		})
	}
	// The info series carries the short cluster name from an ARN, and the
	// EC2 service name.
	wantInfo := map[string]map[string]float64{
		"fargate": fargate, "ec2": ec2,
	}
	for env, labels := range map[string][]string{
		"fargate": {"cluster_name=prom-ecs-exporter-sandbox", "task_id=bae32def0ab64f06818e8862e58f8d6d", "launch_type=FARGATE"},
		"ec2":     {"cluster_name=prom-ecs-exporter-sandbox", "service_name=prom-ecs-exporter-sandbox-main-ec2", "launch_type=EC2"},
	} {
		found := false
		for k := range wantInfo[env] {
			if !strings.HasPrefix(k, "ecs_task_metadata_info{") {
				continue
			}
			found = true
			for _, l := range labels {
				if !strings.Contains(k, l) {
					t.Errorf("%s: info %s lacks %s", env, k, l)
				}
			}
		}
		if !found {
			t.Errorf("%s: no ecs_task_metadata_info", env)
		}
	}
}

// TestBadEndpoint: down, slow, garbage and HTTP errors give ecs_up 0 and
// leave the rest of the registry's series served.
func TestBadEndpoint(t *testing.T) {
	downURL := refusedURL(t)

	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })

	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("{\"Cluster\": \"x\",\n \"Containers\": [oops]}")) // the client under test reports a short body
	}))
	t.Cleanup(garbage.Close)

	wrongType := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("{\n\"Revision\": 9\n}")) // the client under test reports a short body
	}))
	t.Cleanup(wrongType.Close)

	fiveHundred := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal error", http.StatusInternalServerError)
	}))
	t.Cleanup(fiveHundred.Close)

	// /task fine, /task/stats broken: no partial data.
	task := readFile(t, filepath.Join("testdata", "fixtures", "fargate_task_metadata.json"))
	halfMux := http.NewServeMux()
	halfMux.HandleFunc("GET /task", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(task) })
	halfMux.HandleFunc("GET /task/stats", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("[1,2]")) })
	half := httptest.NewServer(halfMux)
	t.Cleanup(half.Close)

	tests := []struct {
		name    string
		url     string
		wantErr string
	}{
		{"down", downURL, "connection refused"},
		{"slow", slow.URL, "deadline exceeded"},
		{"garbage", garbage.URL, "line 2: invalid JSON"},
		{"wrong type", wrongType.URL, "line 2: field Revision"},
		{"http 500", fiveHundred.URL, "HTTP 500"},
		{"stats garbage", half.URL, "/task/stats: line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logBuf bytes.Buffer
			client, err := NewClient(tt.url, 200*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			c := NewCollector(client, newTextLogger(&logBuf))
			other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "other_series", Help: "Another collector."})
			other.Set(7)
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(c, other)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatalf("gather failed: %v", err)
			}
			got := map[string]bool{}
			for _, mf := range mfs {
				got[mf.GetName()] = true
				if mf.GetName() == "ecs_up" && mf.GetMetric()[0].GetGauge().GetValue() != 0 {
					t.Errorf("ecs_up = %v, want 0", mf.GetMetric()[0].GetGauge().GetValue())
				}
			}
			for _, name := range []string{"ecs_up", "ecs_scrape_duration_seconds", "other_series"} {
				if !got[name] {
					t.Errorf("%s not served", name)
				}
			}
			if got["ecs_task_metadata_info"] || got["ecs_container_cpu_usage_seconds_total"] {
				t.Errorf("partial ECS data served after a failed read: %v", got)
			}
			if !strings.Contains(logBuf.String(), tt.wantErr) {
				t.Errorf("log %q lacks %q", logBuf.String(), tt.wantErr)
			}
		})
	}
}

func TestNewClient(t *testing.T) {
	for _, tt := range []struct {
		in      string
		wantErr bool
	}{
		{"http://169.254.170.2/v4/abc", false},
		{"http://169.254.170.2/v4/abc/", false},
		{"", true},
		{"169.254.170.2/v4", true},
	} {
		_, err := NewClient(tt.in, 0)
		if (err != nil) != tt.wantErr {
			t.Errorf("NewClient(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
		}
	}
}

func TestClusterName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"arn:aws:ecs:us-east-1:829490980523:cluster/prom-ecs-exporter-sandbox", "prom-ecs-exporter-sandbox"},
		{"prom-ecs-exporter-sandbox", "prom-ecs-exporter-sandbox"},
		{"arn:aws-cn:ecs:cn-north-1:1:cluster/a", "a"},
		{"", ""},
	} {
		if got := ClusterName(tt.in); got != tt.want {
			t.Errorf("ClusterName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWorkingSetClamp(t *testing.T) {
	// inactive_file above usage happens briefly on cgroup v2; never negative.
	m := MemoryStats{Usage: 100, Stats: map[string]uint64{"inactive_file": 150, "file": 160}}
	if got := m.WorkingSet(); got != 0 {
		t.Fatalf("WorkingSet = %d, want 0", got)
	}
	if got := m.PageCache(); got != 160 {
		t.Fatalf("PageCache = %d, want 160", got)
	}
}

func infoCovers(got map[string]float64, want string) bool {
	pairs := strings.Split(strings.TrimSuffix(strings.TrimPrefix(want, "ecs_task_metadata_info{"), "}"), ",")
	for k := range got {
		if !strings.HasPrefix(k, "ecs_task_metadata_info{") {
			continue
		}
		have := map[string]bool{}
		for _, p := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(k, "ecs_task_metadata_info{"), "}"), ",") {
			have[p] = true
		}
		all := true
		for _, p := range pairs {
			all = all && have[p]
		}
		if all {
			return true
		}
	}
	return false
}

func newTextLogger(w *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil))
}

// refusedURL is a loopback URL whose port stays bound, but not listening,
// for the test's life: a connection to it is refused, and no server
// started meanwhile (in this test or another process) can take the port,
// as it could the port of a closed test server.
func refusedURL(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("bound socket's address is a %T", sa)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", in4.Port)
}
