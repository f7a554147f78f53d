package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/dashboards"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/promproc"
	"github.com/envelope-dev/envelope/internal/promtest"
	"github.com/envelope-dev/envelope/internal/rules"
	"github.com/envelope-dev/envelope/internal/stack"
	"github.com/envelope-dev/envelope/internal/testenv"
)

// The regressed run: the same mix with failing auth requests.
const regressedRun = "../../testdata/k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz"

// The labels that tell the Thanos processes apart in the series they
// serve: Receive and Rule must each carry one external label.
const (
	receiveLabel = `receive_replica="0"`
	ruleLabel    = `rule_replica="0"`
)

// TestThanosScaleOut runs the committed rules on a distributed engine: the
// exporters of TestRulesAreShardSafe (one replaying a whole run, two
// replaying half each) and a fourth replaying the start of a regressed
// run, every run tagged with the second envelope, are scraped by a
// Prometheus in agent mode, which remote-writes them with native
// histograms to Thanos Receive; Thanos Query serves Receive's and the
// Ruler's series; Thanos Rule evaluates rules/envelope.rules.yaml and the
// demo's second envelope's rules (beside it, as `envelope demo` writes
// them) against Query and notifies an Alertmanager. A plain Prometheus
// scraping the same exporters with the committed rules is the reference.
//
// One Receive rather than two behind a hashring: the machine running the
// suite has two cores for every package's tests, and a hashring tests
// Thanos's replication, not the rules; the rules see one Query either
// way.
//
// Checks:
//   - every recording rule of the committed file records on the plain
//     Prometheus and the same series through the Ruler, and every one of
//     the second envelope's records through the Ruler;
//   - the throughput and p95, overall and per endpoint, that the Ruler
//     recorded at instants whose windows hold the same chunks on every
//     target equal the plain Prometheus's rule expressions at the same
//     instants, for the whole run and for its shards, within
//     TestRulesAreShardSafe's recorded tolerance;
//   - the second envelope's failing-requests alert for the regressed run
//     reaches Alertmanager, and none of its alerts for the clean run or
//     its shards does;
//   - every query of the committed dashboards returns data from Thanos
//     Query, but those listed in thanosNoData.
func TestThanosScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Thanos, Prometheus and Alertmanager for about two minutes")
	}
	ctx := context.Background()
	thanos, err := promproc.GoTool(ctx, "thanos")
	if err != nil {
		testenv.Missing(t, "the Thanos build (tools/thanos)", "`go run ./internal/promproc/buildtools` builds it: "+err.Error())
	}
	amBin, err := promproc.GoTool(ctx, "alertmanager")
	if err != nil {
		t.Fatalf("alertmanager: %v", err)
	}
	promBin, err := promproc.GoTool(ctx, "prometheus")
	if err != nil {
		t.Fatalf("prometheus: %v", err)
	}

	committed, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatalf("the committed rules are needed (go generate ./...): %v", err)
	}
	records := recordingRules(t, committed)
	// The envelope the committed rules and dashboards were generated
	// from; the exporters serve its gauges, as deployed.
	env, err := envelope.ReadFile("../demo/envelope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ruleBytes := fastRules(committed)
	second, err := demo.SecondEnvelope()
	if err != nil {
		t.Fatal(err)
	}
	o := rules.DefaultOptions()
	o.Interval = scrapeEvery.String()
	sf, _, err := rules.Generate(second, o)
	if err != nil {
		t.Fatal(err)
	}
	secondBytes, err := rules.Marshal(second, sf)
	if err != nil {
		t.Fatal(err)
	}

	// Every run is tagged with the second envelope, whose bands come
	// from this mix's own baseline runs: it judges them. The committed
	// rules (the demo envelope, taken on ECS) select every run, so they
	// record the same figures; their alerts judge local runs against ECS
	// bands and are not checked here.
	metricLines, pointLines, trends := readRun(t, "testdata/baseline-a-120s.ndjson.gz")
	pointLines = tagEnvelope(pointLines, second.Name)
	priming, rest := split(t, pointLines, trends)
	regMetrics, regPoints, _ := readRun(t, regressedRun)
	regPoints = tagEnvelope(regPoints[:min(len(regPoints), len(pointLines))], second.Name)

	newServer := func() *exporter.Server {
		srv, err := exporter.New(exporter.Config{Envelope: env, Envelopes: []*envelope.Envelope{second}, AllowTags: []string{"envelope"}})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	single, shardA, shardB, regressed := newServer(), newServer(), newServer(), newServer()
	targets := []stack.Target{
		{Server: single, Labels: map[string]string{"testid": "single"}},
		{Server: shardA, Labels: map[string]string{"testid": "sharded"}},
		{Server: shardB, Labels: map[string]string{"testid": "sharded"}},
		{Server: regressed, Labels: map[string]string{"testid": "regressed"}},
	}
	dir := t.TempDir()
	st, err := stack.Start(ctx, stack.Options{
		Dir:                dir,
		Exporters:          targets,
		PrometheusBin:      promBin,
		Rules:              map[string][]byte{"envelope.rules.yaml": ruleBytes},
		ScrapeInterval:     scrapeEvery,
		EvaluationInterval: scrapeEvery,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}()

	// Alertmanager, Receive, Query, Rule, in the order each needs the
	// one before.
	tdir := t.TempDir()
	start := func(name, bin string, args []string, ready string) string {
		t.Helper()
		log := filepath.Join(tdir, name+".log")
		p, err := promproc.StartProcess(name, bin, args, tdir, log, ready)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := p.Stop(10 * time.Second); err != nil {
				t.Error(err)
			}
			if t.Failed() {
				if b, err := os.ReadFile(log); err == nil {
					t.Logf("%s output (last 4 kB):\n%s", name, b[max(0, len(b)-4096):])
				}
			}
		})
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := p.WaitReady(rctx, ready+"/-/ready"); err != nil {
			t.Fatal(err)
		}
		return ready
	}
	write := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(tdir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	free := func() string { return promtest.FreeAddr(t) }

	amAddr := free()
	amURL := start("alertmanager", amBin, []string{
		"--config.file=" + write("alertmanager.yml", []byte("route:\n  receiver: none\n  group_wait: 0s\nreceivers:\n  - name: none\n")),
		"--storage.path=" + filepath.Join(tdir, "am"),
		"--web.listen-address=" + amAddr,
		"--cluster.listen-address=",
	}, "http://"+amAddr)

	recvHTTP, recvGRPC, recvWrite := free(), free(), free()
	start("thanos-receive", thanos, []string{
		"receive",
		"--tsdb.path=" + filepath.Join(tdir, "receive"),
		"--http-address=" + recvHTTP,
		"--grpc-address=" + recvGRPC,
		"--remote-write.address=" + recvWrite,
		"--label=" + receiveLabel,
		// No retention, so no pruning job: in v0.42.4 it runs at start-up
		// when the minute of the day is a multiple of 240 (00:00, 04:00,
		// ... UTC) and dereferences the default tenant's TSDB before it is
		// open, and Receive panics.
		"--tsdb.retention=0d",
		"--log.level=warn",
	}, "http://"+recvHTTP)

	ruleHTTP, ruleGRPC, queryHTTP, queryGRPC := free(), free(), free(), free()
	queryURL := start("thanos-query", thanos, []string{
		"query",
		"--http-address=" + queryHTTP,
		"--grpc-address=" + queryGRPC,
		"--endpoint=" + recvGRPC,
		"--endpoint=" + ruleGRPC,
		"--log.level=warn",
	}, "http://"+queryHTTP)

	start("thanos-rule", thanos, []string{
		"rule",
		"--data-dir=" + filepath.Join(tdir, "rule"),
		"--rule-file=" + write("rules/envelope.rules.yaml", ruleBytes),
		"--rule-file=" + write("rules/"+second.Name+"/envelope.rules.yaml", secondBytes),
		"--eval-interval=" + scrapeEvery.String(),
		"--query=" + queryURL,
		"--alertmanagers.url=" + amURL,
		"--http-address=" + ruleHTTP,
		"--grpc-address=" + ruleGRPC,
		"--label=" + ruleLabel,
		"--log.level=warn",
	}, "http://"+ruleHTTP)

	// The agent scrapes the same exporters with the same target labels.
	var scrape strings.Builder
	scrape.WriteString("scrape_configs:\n  - job_name: " + stack.ExporterJob + "\n    static_configs:\n")
	for i, tg := range targets {
		fmt.Fprintf(&scrape, "      - targets: [%q]\n        labels: {testid: %q}\n", strings.TrimPrefix(st.ExporterURLs[i], "http://"), tg.Labels["testid"])
	}
	promtest.Start(t, promtest.Options{
		Agent: true,
		Config: fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_native_histograms: true
  always_scrape_classic_histograms: true
%sremote_write:
  - url: http://%s/api/v1/receive
    send_native_histograms: true
    queue_config:
      batch_send_deadline: 200ms
`, scrapeEvery, scrape.String(), recvWrite),
	})

	// Replay as TestRulesAreShardSafe does, the regressed run beside it.
	replay := chunkReplayer(t)
	var steps []step
	feed := func(all [][]byte, halves [2][][]byte, reg [][]byte) {
		s := step{from: time.Now()}
		replay(single, "single", all)
		replay(shardA, "shard-a", halves[0])
		replay(shardB, "shard-b", halves[1])
		replay(regressed, "regressed", reg)
		s.to = time.Now()
		steps = append(steps, s)
	}
	for _, srv := range []*exporter.Server{single, shardA, shardB} {
		replay(srv, "metrics", metricLines)
	}
	replay(regressed, "metrics", regMetrics)
	regPer := (len(regPoints) + chunks) / (chunks + 1)
	regChunk := func(k int) [][]byte {
		return regPoints[min(k*regPer, len(regPoints)):min((k+1)*regPer, len(regPoints))]
	}
	feed(priming.all, priming.half, regChunk(0))
	begin := steps[0].to
	per := (len(rest.all) + chunks - 1) / chunks
	for k := range chunks {
		time.Sleep(time.Until(begin.Add(time.Duration(k+1) * chunkEvery)))
		lo, hi := min(k*per, len(rest.all)), min((k+1)*per, len(rest.all))
		var halves [2][][]byte
		for i := lo; i < hi; i++ {
			halves[rest.shard[i]] = append(halves[rest.shard[i]], rest.all[i])
		}
		feed(rest.all[lo:hi], halves, regChunk(k+1))
	}
	end := steps[len(steps)-1].to
	time.Sleep(time.Until(end.Add(3 * time.Second)))

	// Every recording rule that records on the plain Prometheus records
	// the same series through the Ruler, into Query; every one of the
	// second envelope's records too.
	names := make([]string, 0, len(records))
	for r := range records {
		names = append(names, r)
	}
	sort.Strings(names)
	recorded := 0
	for _, r := range names {
		ref, err := stack.Query(ctx, st.PrometheusURL, fmt.Sprintf(`%s{envelope=%q}`, r, env.Name), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := stack.Query(ctx, queryURL, fmt.Sprintf(`%s{envelope=%q}`, r, env.Name), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ref) > 0 {
			recorded++
		}
		if len(got) != len(ref) {
			t.Errorf("%s: %d series through the Thanos Ruler, %d on Prometheus", r, len(got), len(ref))
		}
		for _, s := range got {
			if s.Labels["rule_replica"] != "0" {
				t.Errorf("%s %v: not the Ruler's (no %s)", r, s.Labels, ruleLabel)
			}
		}
	}
	t.Logf("%d of %d recording rules record on Prometheus; the Thanos Ruler recorded the same series", recorded, len(names))
	if recorded < len(names) {
		t.Errorf("only %d of %d recording rules recorded on Prometheus: the replay does not exercise every rule", recorded, len(names))
	}
	for r := range recordingRules(t, secondBytes) {
		got, err := stack.Query(ctx, queryURL, fmt.Sprintf(`%s{envelope=%q}`, r, second.Name), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Errorf("%s: the second envelope's rule recorded nothing through the Thanos Ruler", r)
		}
	}
	var groups struct {
		Data struct {
			Groups []struct {
				File  string `json:"file"`
				Rules []any  `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	getJSON(t, "http://"+ruleHTTP+"/api/v1/rules", &groups)
	files := map[string]int{}
	for _, g := range groups.Data.Groups {
		files[filepath.Base(filepath.Dir(g.File))] += len(g.Rules)
	}
	if files["rules"] == 0 || files[second.Name] == 0 {
		t.Errorf("the Ruler loaded rules per folder %v, want both envelopes'", files)
	}

	// The Ruler's throughput and p95, overall and per endpoint, against
	// the plain Prometheus's expressions at the same instants.
	for _, rec := range []string{catalogue.RecThroughput, catalogue.RecLatencyP95, catalogue.RecEndpointRate, catalogue.RecEndpointP95} {
		samples, err := stack.Query(ctx, queryURL, fmt.Sprintf("%s{envelope=%q}[%ds]", rec, env.Name, int(time.Since(begin).Seconds())+1), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		byTime := map[int64][]stack.Sample{}
		for _, s := range samples {
			if sameChunks(steps, s.Time) && s.Labels["testid"] != "regressed" {
				byTime[s.Time.UnixMilli()] = append(byTime[s.Time.UnixMilli()], s)
			}
		}
		evals, pairs, worst := 0, 0, 0.0
		for _, ss := range byTime {
			ref, err := stack.Query(ctx, st.PrometheusURL, records[rec], ss[0].Time)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]float64{}
			for _, s := range ref {
				if s.Labels["testid"] == "single" {
					want[ruleKey(s.Labels)] = s.Value
				}
			}
			for _, s := range ss {
				w, ok := want[ruleKey(s.Labels)]
				if !ok || !(w > 0) {
					t.Errorf("%s at %s %v: Prometheus has %v", rec, s.Time.Format("15:04:05.000"), s.Labels, w)
					continue
				}
				d := relDiff(w, s.Value)
				if d > recordedTolerance {
					t.Errorf("%s at %s %v: Thanos Ruler %.12g, Prometheus %.12g (relative difference %.3g > %.3g)", rec, s.Time.Format("15:04:05.000"), s.Labels, s.Value, w, d, recordedTolerance)
				}
				worst = max(worst, d)
				pairs++
			}
			evals++
		}
		t.Logf("%s: %d Ruler evaluations, %d series compared with Prometheus, largest relative difference %.2g", rec, evals, pairs, worst)
		if evals < 3 || pairs < 2*evals {
			t.Errorf("%s: %d Ruler evaluations and %d pairs, want at least 3 evaluations of the whole run and its shards", rec, evals, pairs)
		}
	}

	// The regressed run's failing-requests alert reaches Alertmanager;
	// nothing about the clean runs does.
	var alerts []amAlert
	deadline := time.Now().Add(time.Minute)
	for {
		alerts = alertmanagerAlerts(t, amURL)
		if slices.ContainsFunc(alerts, func(a amAlert) bool {
			return a.Labels["alertname"] == rules.AlertRequestsFailing && a.Labels["testid"] == "regressed" && a.Labels["envelope"] == second.Name
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s for the regressed run in Alertmanager after a minute; it holds %v", rules.AlertRequestsFailing, alerts)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var seen []string
	for _, a := range alerts {
		if a.Labels["envelope"] != second.Name {
			continue
		}
		seen = append(seen, a.Labels["alertname"]+"{testid="+a.Labels["testid"]+"}")
		if id := a.Labels["testid"]; id == "single" || id == "sharded" {
			t.Errorf("Alertmanager got %v for a clean run", a.Labels)
		}
		if a.Labels["rule_replica"] != "0" {
			t.Errorf("Alertmanager got %v, not from the Thanos Ruler", a.Labels)
		}
	}
	t.Logf("Alertmanager holds %d alerts, of the second envelope %v", len(alerts), seen)

	// Every query of the committed dashboards returns data from Thanos
	// Query, for one of the envelopes the exporters serve (the demo's
	// bands its endpoints by custom trend, the second by the name tag).
	ds, err := dashboards.Build(dashboards.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checked, skipped := 0, 0
	for _, d := range ds {
		qs, err := dashboards.Queries(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if noData(q.Where) != "" {
				skipped++
				continue
			}
			var tried []string
			for _, e := range []string{env.Name, second.Name} {
				expr := dashboards.Substitute(q.Expr, map[string]string{
					"__rate_interval": "10s", "__range": "5m", "__interval": "1s",
					"testid": ".*", "scenario": ".*", "endpoint": ".*", "envelope": e,
					"trend": catalogue.SeriesName("actor_get", "trend", "time"),
				})
				ss, err := stack.Query(ctx, queryURL, expr, time.Time{})
				if err != nil {
					t.Errorf("%s: %v\n%s", q.Where, err, expr)
				}
				if len(ss) > 0 {
					tried = nil
					break
				}
				tried = append(tried, expr)
			}
			if len(tried) > 0 {
				t.Errorf("%s: no data from Thanos Query\n%s", q.Where, strings.Join(tried, "\n"))
			}
			checked++
		}
	}
	t.Logf("dashboards: %d queries returned data from Thanos Query, %d skipped", checked, skipped)
	if checked < 60 {
		t.Errorf("only %d dashboard queries checked", checked)
	}
}

// thanosNoData lists the dashboard queries that cannot return data in
// this test and why; every other query must, from Thanos Query.
var thanosNoData = []struct {
	where  *regexp.Regexp
	reason string
}{
	{regexp.MustCompile(`^ecs\.json `), "no ECS task metadata or CloudWatch outside ECS: the ECS rows stay empty by design"},
	{regexp.MustCompile(`"(ECS metadata up|CloudWatch up)"`), "ECS and CloudWatch collectors are off outside ECS"},
	{regexp.MustCompile(`"Per-stage statistics"`), "needs requests tagged with a stage (k6-jslib-utils), which the fixture runs are not"},
	{regexp.MustCompile(`"Ingest lag"`), "lag is measured for live inputs only; the test replays finished files"},
	{regexp.MustCompile(`"(Iteration rate" ref B|Dropped iterations by scenario")`), "the fixture runs dropped no iteration"},
	{regexp.MustCompile(`"Bad lines by reason"`), "the replayed files hold no malformed line"},
	{regexp.MustCompile(`"(Coarse OTLP buckets|OTLP streams with explicit buckets)"`), "the replays are point files, not OTLP pushes with explicit buckets (the dashboards' own end-to-end test pushes a real capture for these)"},
	{regexp.MustCompile(`"Throughput CV \(alert view\)" ref B`), "neither envelope sets a throughput CV limit, so the exporters serve no such gauge"},
	{regexp.MustCompile(`"(p95 latency by endpoint against its band|p99 latency by endpoint against its band)" ref [BC]|"Endpoints over the selected runs" ref F`), "both envelopes band their endpoints by custom trend, none by tag"},
}

func noData(where string) string {
	for _, s := range thanosNoData {
		if s.where.MatchString(where) {
			return s.reason
		}
	}
	return ""
}

// fastRules shortens the committed rules' timing as the other end-to-end
// tests do: groups evaluated every scrape interval, and every alert's
// `for` 5s, but the exporter-down alert's (the agent's first samples reach
// Receive only after a few seconds).
func fastRules(b []byte) []byte {
	b = bytes.ReplaceAll(b, []byte("interval: 15s"), []byte("interval: "+scrapeEvery.String()))
	forLine := regexp.MustCompile(`^(\s+for: )\S+$`)
	var out [][]byte
	alert := ""
	for _, l := range bytes.Split(b, []byte("\n")) {
		if f := bytes.Fields(l); len(f) == 3 && string(f[1]) == "alert:" {
			alert = string(f[2])
		}
		if alert != rules.AlertExporterDown {
			l = forLine.ReplaceAll(l, []byte("${1}5s"))
		}
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n"))
}

// ruleKey is a series' labels but those that differ between a recorded
// series and its expression's result (name, envelope, the Ruler's
// external label) and the testid that tells the whole run from its shards.
func ruleKey(l map[string]string) string {
	m := map[string]string{}
	for k, v := range l {
		switch k {
		case "__name__", "envelope", "rule_replica", "testid":
		default:
			m[k] = v
		}
	}
	return labelsBut(m, "")
}

// tagEnvelope adds the k6 tag envelope=name to every point line, as
// `k6 run --tag envelope=name` does.
func tagEnvelope(lines [][]byte, name string) [][]byte {
	tag := []byte(`"tags":{"envelope":"` + name + `"`)
	out := make([][]byte, len(lines))
	for i, l := range lines {
		switch {
		case bytes.Contains(l, []byte(`"tags":{"`)):
			out[i] = bytes.Replace(l, []byte(`"tags":{"`), append(bytes.Clone(tag), ',', '"'), 1)
		case bytes.Contains(l, []byte(`"tags":{}`)):
			out[i] = bytes.Replace(l, []byte(`"tags":{}`), append(bytes.Clone(tag), '}'), 1)
		default:
			out[i] = bytes.Replace(l, []byte(`"tags":null`), append(bytes.Clone(tag), '}'), 1)
		}
	}
	return out
}

// amAlert is an alert as Alertmanager's API v2 lists it.
type amAlert struct {
	Labels map[string]string `json:"labels"`
}

func alertmanagerAlerts(t *testing.T, base string) []amAlert {
	t.Helper()
	var as []amAlert
	getJSON(t, base+"/api/v2/alerts", &as)
	return as
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url) //nolint:gosec,noctx // a loopback URL the test built
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck // only read
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v: %s", url, resp.StatusCode, err, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}
