package rules_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/dashboards"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/promproc"
	"github.com/envelope-dev/envelope/internal/promtest"
	"github.com/envelope-dev/envelope/internal/rules"
	"github.com/envelope-dev/envelope/internal/simulate"
)

// The evaluation interval of this test's rule groups and the `for` of
// every alert but the exporter-down one: the expressions are the
// generated ones, only the timing is scaled.
const (
	multiEval = 2 * time.Second
	multiFor  = "6s"
)

// Three envelopes' rules in one Prometheus, one exporter replaying three
// runs told apart by their envelope tag: a baseline-like run for envelope
// A, a run with failed requests for envelope B, and a later-step run (more
// throughput, more failures) for neither; the third envelope matches none.
// Only B's alerts fire, only for
// the regressed run; A's and B's recording rules both record, apart by
// their envelope label; nothing concerns the later-step run. The same rules
// evaluated by a second Prometheus fed by remote_write from a Prometheus
// in agent mode fire the same alerts at the same time within one
// evaluation interval. The exporter-health dashboard's "Exporters up"
// panel shows an exporter that went down.
func TestSeveralEnvelopesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the exporter and three real Prometheus processes")
	}
	demo, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	named := func(name string) *envelope.Envelope {
		e := *demo
		e.Name = name
		e.Match = fmt.Sprintf("envelope=%q", name)
		return &e
	}
	// A third envelope matches no run: its rules load beside the others
	// and stay silent.
	envA, envB, envC := named("checkout-50vu-a"), named("checkout-50vu-b"), named("checkout-100vu-c")
	dir := t.TempDir()
	var ruleFiles []string
	var ruleNames []string
	for _, env := range []*envelope.Envelope{envA, envB, envC} {
		o := rules.DefaultOptions()
		o.Interval = multiEval.String()
		f, _, err := rules.Generate(env, o)
		if err != nil {
			t.Fatal(err)
		}
		for gi := range f.Groups {
			for ri := range f.Groups[gi].Rules {
				if r := f.Groups[gi].Rules[ri]; r.For != "" && r.Alert != rules.AlertExporterDown {
					f.Groups[gi].Rules[ri].For = multiFor
				}
			}
		}
		b, err := rules.Marshal(env, f)
		if err != nil {
			t.Fatal(err)
		}
		name := env.Name + ".rules.yaml"
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ruleFiles = append(ruleFiles, p)
		ruleNames = append(ruleNames, fmt.Sprintf("%q", p))
	}
	// Both rule-evaluating Prometheus load the same paths: a group's
	// evaluation phase derives from its name and file, so they evaluate
	// at the same instants and their alerts' times compare exactly.
	ruleFilesYAML := "rule_files: [" + strings.Join(ruleNames, ", ") + "]\n"
	// The envelopes' files pass promtool together.
	if out, err := promtest.Promtool(t, append([]string{"check", "rules", "--lint=all", "--lint-fatal"}, ruleFiles...)...); err != nil {
		t.Fatalf("promtool check rules over both envelopes: %v\n%s", err, out)
	}

	type run struct {
		testid, tag string
		o           simulate.Options
	}
	runs := []run{
		{"baseline-a", envA.Name, simulate.Options{Seed: 31}},
		{"regressed-b", envB.Name, simulate.Options{Seed: 32, ErrorRate: 0.01}},
		{"phase3-100vu", "phase3-100vu", simulate.Options{Seed: 33, ErrorRate: 0.02, ThroughputFactor: 2}},
	}
	srv, err := exporter.New(exporter.Config{Envelopes: []*envelope.Envelope{envA, envB, envC}, AllowTags: []string{"envelope"}, DisableExporterMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	var chunks [][][][]byte
	for _, r := range runs {
		p := filepath.Join(dir, r.testid+".ndjson")
		r.o.Duration, r.o.TestID = time.Minute, r.testid
		if err := simulate.WriteFile(p, demo, r.o); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, tagged(t, p, r.tag, 8))
	}
	srv.SetReady(true)
	exporterAddr := serveOn(t, srv)
	// A second exporter that goes down, for the health panel.
	spare, err := exporter.New(exporter.Config{DisableExporterMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	spare.SetReady(true)
	spareCtx, stopSpare := context.WithCancel(context.Background())
	spareAddr := serveOnCtx(t, spareCtx, spare)

	global := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: %s
`, multiEval)
	scrape := fmt.Sprintf(`scrape_configs:
  - job_name: envelope-exporter
    scrape_native_histograms: true
    always_scrape_classic_histograms: true
    static_configs:
      - targets: [%q]
`, exporterAddr)
	ready := 4 * time.Minute
	prom := promtest.Start(t, promtest.Options{
		Config: global + ruleFilesYAML + scrape + fmt.Sprintf(`  - job_name: envelope-exporter-spare
    static_configs:
      - targets: [%q]
`, spareAddr),
		Ready: ready,
	})
	receiver := promtest.Start(t, promtest.Options{
		Config: global + ruleFilesYAML,
		Ready:  ready,
		Flags:  []string{"--web.enable-remote-write-receiver"},
	})
	promtest.Start(t, promtest.Options{
		Agent: true,
		Config: "global:\n  scrape_interval: 1s\n" + scrape + fmt.Sprintf(`remote_write:
  - url: %s/api/v1/write
    send_native_histograms: true
    queue_config:
      batch_send_deadline: 200ms
`, receiver.URL),
		Ready: ready,
	})

	// Both paths scrape the exporter before the runs start (a fresh
	// Prometheus syncs its targets only after a few seconds), so the
	// comparison below times the rules, not the start-up.
	for name, p := range map[string]*promtest.Prometheus{"direct": prom, "remote-write": receiver} {
		waitUntil := time.Now().Add(time.Minute)
		for {
			ss, _ := p.Query(`up{job="envelope-exporter"} == 1`)
			if len(ss) > 0 {
				break
			}
			if time.Now().After(waitUntil) {
				t.Fatalf("%s: the exporter target is not up after a minute", name)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	// Feed the runs in chunks a second apart, so counters grow across
	// scrapes as they do live.
	chunkDir := t.TempDir()
	for i := range chunks[0] {
		for ri, r := range runs {
			p := filepath.Join(chunkDir, fmt.Sprintf("%s-%03d.ndjson", r.testid, i))
			if err := os.WriteFile(p, bytes.Join(chunks[ri][i], []byte("\n")), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.ReplayFile(p); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
	}
	stopSpare()

	// Wait for B's failing-requests alert to fire in both, then one `for`
	// and two evaluations more so anything else that would fire has.
	firingAt := map[string]time.Time{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(firingAt) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("K6EnvelopeRequestsFailing for regressed-b fired only in %v", firingAt)
		}
		time.Sleep(500 * time.Millisecond)
		for name, p := range map[string]*promtest.Prometheus{"direct": prom, "remote-write": receiver} {
			as, _ := p.Alerts()
			for _, a := range as {
				if a.Labels["alertname"] == rules.AlertRequestsFailing && a.Labels["testid"] == "regressed-b" && a.State == "firing" {
					if _, ok := firingAt[name]; !ok {
						firingAt[name] = a.ActiveAt
					}
				}
			}
		}
	}
	time.Sleep(8*time.Second + 2*multiEval)

	summaries := map[string][]string{}
	for name, p := range map[string]*promtest.Prometheus{"direct": prom, "remote-write": receiver} {
		as, err := p.Alerts()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range as {
			got = append(got, fmt.Sprintf("%s{envelope=%s,testid=%s}", a.Labels["alertname"], a.Labels["envelope"], a.Labels["testid"]))
			if a.Labels["envelope"] != envB.Name || a.Labels["testid"] != "regressed-b" {
				t.Errorf("%s: alert %v (%s) concerns another envelope or test", name, a.Labels, a.State)
			}
		}
		sort.Strings(got)
		summaries[name] = got
		t.Logf("%s: alerts %v", name, got)

		// The later-step run's failures reached this Prometheus: the rules
		// were silent on it because no envelope matches it, not for want
		// of data.
		if ss, err := p.Query(`sum(k6_http_req_failed_total{condition="nonzero", testid="phase3-100vu"}) > 0`); err != nil || len(ss) == 0 {
			t.Errorf("%s: no failed requests of the later-step run stored (%v)", name, err)
		}

		// Both envelopes record, apart by their envelope label, and only
		// for the tests they match.
		ss, err := promproc.Query(context.Background(), p.URL, `testid:k6_http_reqs:rate1m`, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		rec := map[string]string{}
		for _, s := range ss {
			rec[s.Labels["envelope"]] = s.Labels["testid"]
			if s.Labels["testid"] == "phase3-100vu" {
				t.Errorf("%s: the later-step run was recorded: %v", name, s.Labels)
			}
		}
		if len(ss) != 2 || rec[envA.Name] != "baseline-a" || rec[envB.Name] != "regressed-b" {
			t.Errorf("%s: recorded throughput %v, want baseline-a under %s and regressed-b under %s", name, ss, envA.Name, envB.Name)
		}
	}
	if strings.Join(summaries["direct"], " ") != strings.Join(summaries["remote-write"], " ") {
		t.Errorf("direct and remote-write Prometheus disagree: %v vs %v", summaries["direct"], summaries["remote-write"])
	}
	for name, p := range map[string]*promtest.Prometheus{"direct": prom, "remote-write": receiver} {
		ss, err := p.Query(`min_over_time(timestamp(k6_http_req_failed_total{condition="nonzero", testid="regressed-b"})[3m:100ms])`)
		if err == nil && len(ss) > 0 {
			t.Logf("%s: first failed-request sample at %v", name, time.UnixMilli(int64(ss[0].Value*1000)).UTC())
		}
	}
	if d := firingAt["direct"].Sub(firingAt["remote-write"]).Abs(); d > multiEval {
		t.Errorf("active at %v (direct) and %v (remote-write): %v apart, more than one evaluation interval", firingAt["direct"], firingAt["remote-write"], d)
	} else {
		t.Logf("K6EnvelopeRequestsFailing active at %v (direct), %v (remote-write): %v apart", firingAt["direct"], firingAt["remote-write"], d)
	}

	// The "Exporters up" panel of the health dashboard shows the stopped
	// exporter as 0.
	expr := panelExpr(t, "Exporters up")
	expr = strings.ReplaceAll(expr, "$__range", "1h")
	var vals map[string]float64
	deadline = time.Now().Add(30 * time.Second)
	for {
		ss, err := prom.Query(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		vals = map[string]float64{}
		for _, s := range ss {
			vals[s.Labels["instance"]] = s.Value
		}
		if v, ok := vals[spareAddr]; ok && v == 0 && vals[exporterAddr] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Exporters up (%s) = %v, want %s at 1 and the stopped %s at 0", expr, vals, exporterAddr, spareAddr)
		}
		time.Sleep(time.Second)
	}
}

// tagged reads a k6 NDJSON run, adds the tag envelope=tag to every point
// (as `k6 run --tag envelope=…` does) and splits it into n chunks, each
// led by every Metric line.
func tagged(t *testing.T, path, tag string, n int) [][][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // only read
	var defs, points [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m["type"] == "Point" {
			d := m["data"].(map[string]any)
			tags, _ := d["tags"].(map[string]any)
			if tags == nil {
				tags = map[string]any{}
			}
			tags["envelope"] = tag
			d["tags"] = tags
			b, _ := json.Marshal(m)
			points = append(points, b)
		} else {
			defs = append(defs, bytes.Clone(sc.Bytes()))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	out := make([][][]byte, n)
	for i := range n {
		lo, hi := len(points)*i/n, len(points)*(i+1)/n
		out[i] = append(append([][]byte{}, defs...), points[lo:hi]...)
	}
	return out
}

func serveOn(t *testing.T, srv *exporter.Server) string {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return serveOnCtx(t, ctx, srv)
}

func serveOnCtx(t *testing.T, ctx context.Context, srv *exporter.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ctx, l) }() // stops with ctx; a failed start shows as no scraped series
	return l.Addr().String()
}

// panelExpr is the first query of the exporter-health panel titled title.
func panelExpr(t *testing.T, title string) string {
	t.Helper()
	ds, err := dashboards.Build(dashboards.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		b, err := d.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, p := range m.Panels {
			if p.Title == title && len(p.Targets) > 0 {
				return p.Targets[0].Expr
			}
		}
	}
	t.Fatalf("no panel %q", title)
	return ""
}
