package stack_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/promproc"
	"github.com/envelope-dev/envelope/internal/stack"
)

// The committed rules, as Prometheus loads them in compose and Kubernetes.
const rulesFile = "../../rules/envelope.rules.yaml"

// Timing of the replay. The rules use 1m windows, so the test needs a
// little over a minute of data after the priming step.
const (
	scrapeEvery = time.Second
	chunkEvery  = 5 * time.Second
	chunks      = 15
	window      = time.Minute
	// slop covers the gap between a scrape's timestamp and the moment it
	// reads the exporter, and between a step's timestamps and its effect.
	slop = 400 * time.Millisecond

	// With the same chunks in every window, single and sharded differ
	// only by scrape timing: timestamp jitter through rate()'s
	// extrapolation (a few ms in a 59 s sampled span), and on a loaded
	// machine the odd scrape delayed past a chunk. So most pairs must be
	// within typicalTolerance and every pair within instantTolerance; the
	// shard-unsafe controls are off by more than 10%.
	typicalTolerance = 0.005
	instantTolerance = 0.05
	// A rule evaluated while a scrape is being committed reads one
	// target's previous sample, which moves its extrapolation by up to
	// a scrape interval in 60 s.
	recordedTolerance = 0.03
)

// step is one ingestion into every exporter, between two wall times.
type step struct{ from, to time.Time }

// TestRulesAreShardSafe proves the recording rules shard-safe: two
// exporters that each replay half of a run's points, scraped by one
// Prometheus, give the same recorded throughput and p95, overall and per
// endpoint, as one exporter replaying all of them.
//
// One Prometheus scrapes three exporters fed in lockstep: "single" gets
// every point, shards A and B half each (A the faster half of every
// latency series, B the slower half; counters alternate), and a target
// label testid tells the two setups apart (the run's own testid moves to
// exported_testid). Every series is created in a first priming step, then
// the rest of the run arrives in chunks 5 s apart while Prometheus scrapes
// every second.
//
// Checks:
//   - the rule expressions, queried at instants whose 1m window edges
//     fall between chunk steps (so every target's window holds the same
//     chunks), agree: at least 80% of pairs within 0.5%, all within 5%
//     (scrape timing is the only source of difference);
//   - shard-unsafe formulations over the same data (one exporter's rate,
//     the mean of per-exporter p95s) are far apart, so the comparison
//     discriminates;
//   - the series Prometheus's own rule evaluation recorded agree too (the
//     group interval shortened from 15s to 1s so a minute of data gives
//     enough evaluations).
func TestRulesAreShardSafe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Prometheus for about 90 s")
	}
	ruleBytes, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatalf("the committed rules are needed (go generate ./...): %v", err)
	}
	records := recordingRules(t, ruleBytes)
	for _, r := range []string{catalogue.RecThroughput, catalogue.RecLatencyP95, catalogue.RecEndpointRate, catalogue.RecEndpointP95} {
		if records[r] == "" {
			t.Fatalf("%s: no recording rule %s", rulesFile, r)
		}
	}
	// Evaluate every second instead of the committed 15s: same
	// expressions, more evaluations per minute of test.
	ruleBytes = bytes.ReplaceAll(ruleBytes, []byte("interval: 15s"), []byte("interval: 1s"))

	ctx := context.Background()
	// The pinned Prometheus (go.mod's tool directive), never one on $PATH.
	bin, err := promproc.GoTool(ctx, "prometheus")
	if err != nil {
		t.Fatalf("prometheus: %v", err)
	}

	metricLines, pointLines, trends := readRun(t, "testdata/baseline-a-120s.ndjson.gz")
	priming, rest := split(t, pointLines, trends)

	newServer := func() *exporter.Server {
		srv, err := exporter.New(exporter.Config{DisableExporterMetrics: true})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	single, shardA, shardB := newServer(), newServer(), newServer()
	st, err := stack.Start(ctx, stack.Options{
		Dir: t.TempDir(),
		Exporters: []stack.Target{
			{Server: single, Labels: map[string]string{"testid": "single"}},
			{Server: shardA, Labels: map[string]string{"testid": "sharded"}},
			{Server: shardB, Labels: map[string]string{"testid": "sharded"}},
		},
		PrometheusBin:      bin,
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

	replay := chunkReplayer(t)
	var steps []step
	feed := func(all [][]byte, halves [2][][]byte) {
		s := step{from: time.Now()}
		replay(single, "single", all)
		replay(shardA, "shard-a", halves[0])
		replay(shardB, "shard-b", halves[1])
		s.to = time.Now()
		steps = append(steps, s)
	}

	// Metric lines define the types everywhere, then the priming step.
	for _, srv := range []*exporter.Server{single, shardA, shardB} {
		replay(srv, "metrics", metricLines)
	}
	feed(priming.all, priming.half)
	start := steps[0].to
	per := (len(rest.all) + chunks - 1) / chunks
	for k := 0; k < chunks; k++ {
		time.Sleep(time.Until(start.Add(time.Duration(k+1) * chunkEvery)))
		lo, hi := min(k*per, len(rest.all)), min((k+1)*per, len(rest.all))
		var halves [2][][]byte
		for i := lo; i < hi; i++ {
			halves[rest.shard[i]] = append(halves[rest.shard[i]], rest.all[i])
		}
		feed(rest.all[lo:hi], halves)
	}
	end := steps[len(steps)-1].to
	time.Sleep(time.Until(end.Add(3 * time.Second)))

	valid := func(te time.Time) bool { return sameChunks(steps, te) }

	// The rule expressions at instants whose window edges fall between
	// steps: every target's window holds the same chunks.
	var instants []time.Time
	for te := start.Add(window + 2*time.Second); te.Before(end.Add(2 * time.Second)); te = te.Add(250 * time.Millisecond) {
		if valid(te) {
			instants = append(instants, te)
		}
	}
	if len(instants) < 5 {
		t.Fatalf("only %d valid instants; steps %v", len(instants), steps)
	}
	checked, worst, diffs := 0, 0.0, []float64{}
	for _, rec := range []string{catalogue.RecThroughput, catalogue.RecLatencyP95, catalogue.RecEndpointRate, catalogue.RecEndpointP95} {
		for _, te := range instants {
			samples, err := stack.Query(ctx, st.PrometheusURL, records[rec], te)
			if err != nil {
				t.Fatal(err)
			}
			n, w, ds := compare(t, rec+" at "+te.Format("15:04:05.000"), samples, instantTolerance)
			checked += n
			worst = max(worst, w)
			diffs = append(diffs, ds...)
		}
	}
	sort.Float64s(diffs)
	if len(diffs) > 0 {
		within := sort.SearchFloat64s(diffs, typicalTolerance+1e-15)
		t.Logf("rule expressions at %d instants: %d single/sharded pairs, relative difference median %.2g, largest %.2g, %d%% within %g",
			len(instants), checked, diffs[len(diffs)/2], worst, 100*within/len(diffs), typicalTolerance)
		if within*10 < len(diffs)*8 {
			t.Errorf("only %d of %d single/sharded pairs within %g", within, len(diffs), typicalTolerance)
		}
	}
	// Throughput and p95 overall, rate and p95 of 4 endpoints.
	if want := len(instants) * 10; checked < want {
		t.Errorf("compared %d single/sharded pairs, want at least %d", checked, want)
	}

	// Controls: shard-unsafe formulations over the same data are far off,
	// so the comparison above can tell safe rules from unsafe ones.
	for _, c := range []struct{ name, expr string }{
		{"one exporter's rate", `max by (testid) (sum by (testid, instance) (rate(k6_http_reqs_total[1m])))`},
		{"mean of the exporters' p95", `avg by (testid) (histogram_quantile(0.95, sum by (testid, instance) (rate(k6_http_req_duration_seconds[1m]))))`},
	} {
		samples, err := stack.Query(ctx, st.PrometheusURL, c.expr, instants[0])
		if err != nil {
			t.Fatal(err)
		}
		v := map[string]float64{}
		for _, s := range samples {
			v[s.Labels["testid"]] = s.Value
		}
		d := relDiff(v["single"], v["sharded"])
		t.Logf("control %s: single %.4g, sharded %.4g (relative difference %.2g)", c.name, v["single"], v["sharded"], d)
		if !(d > 0.1) {
			t.Errorf("control %s: single %v, sharded %v differ by %.2g only; the split does not exercise shard safety", c.name, v["single"], v["sharded"], d)
		}
	}

	// The series Prometheus's own rule evaluation recorded.
	for _, rec := range []string{catalogue.RecThroughput, catalogue.RecLatencyP95, catalogue.RecEndpointP95} {
		samples, err := stack.Query(ctx, st.PrometheusURL, fmt.Sprintf("%s[%ds]", rec, int(time.Since(start).Seconds())+1), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		byTime := map[int64][]stack.Sample{}
		for _, s := range samples {
			if valid(s.Time) {
				byTime[s.Time.UnixMilli()] = append(byTime[s.Time.UnixMilli()], s)
			}
		}
		evals, worst := 0, 0.0
		for _, ss := range byTime {
			n, w, _ := compare(t, rec+" recorded at "+ss[0].Time.Format("15:04:05.000"), ss, recordedTolerance)
			if n > 0 {
				evals++
			}
			worst = max(worst, w)
		}
		t.Logf("%s: %d recorded evaluations compared, largest relative difference %.2g", rec, evals, worst)
		if evals < 3 {
			t.Errorf("%s: %d recorded evaluations with both setups, want at least 3", rec, evals)
		}
	}
}

// sameChunks reports whether an evaluation at te reads the same chunks on
// every target: the window starts after the first chunk, and neither
// window edge has a step within one scrape interval.
func sameChunks(steps []step, te time.Time) bool {
	lo := te.Add(-window)
	// rate() extrapolates a counter's window start no further than
	// where it would reach zero; right after priming the counters are
	// near zero and that cap differs by target. One chunk later the
	// first value in the window is far above a second's increase.
	if !lo.After(steps[1].to.Add(slop)) {
		return false
	}
	// A step inside (lo, lo+scrape] lands before the first sample of
	// some targets and after it for others; one inside (te-scrape, te]
	// likewise for the last sample.
	for _, s := range steps {
		for _, edge := range []time.Time{lo.Add(scrapeEvery), te} {
			if s.to.After(edge.Add(-scrapeEvery-slop)) && s.from.Before(edge.Add(slop)) {
				return false
			}
		}
	}
	return true
}

// compare checks that the samples hold, per label set but testid, one
// single and one sharded value within tol (relative). It returns the
// number of pairs compared, the largest relative difference and all of
// them.
func compare(t *testing.T, what string, samples []stack.Sample, tol float64) (int, float64, []float64) {
	t.Helper()
	pairs := map[string]map[string]float64{}
	for _, s := range samples {
		key := labelsBut(s.Labels, "testid")
		if pairs[key] == nil {
			pairs[key] = map[string]float64{}
		}
		pairs[key][s.Labels["testid"]] = s.Value
	}
	n, worst, all := 0, 0.0, []float64{}
	for key, p := range pairs {
		a, okA := p["single"]
		b, okB := p["sharded"]
		if !okA || !okB {
			t.Errorf("%s %s: single %v, sharded %v: one is missing", what, key, p["single"], p["sharded"])
			continue
		}
		if a <= 0 || math.IsNaN(a) {
			t.Errorf("%s %s: single = %v, want a positive figure", what, key, a)
			continue
		}
		d := relDiff(a, b)
		if d > tol {
			t.Errorf("%s %s: single %.12g, sharded %.12g (relative difference %.3g > %.3g)", what, key, a, b, d, tol)
		}
		worst = max(worst, d)
		all = append(all, d)
		n++
	}
	if n == 0 {
		t.Errorf("%s: no samples", what)
	}
	return n, worst, all
}

func relDiff(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b)) }

func labelsBut(l map[string]string, drop string) string {
	var keys []string
	for k := range l {
		if k != drop {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, l[k])
	}
	return "{" + b.String() + "}"
}

// recordingRules maps record name to expression.
func recordingRules(t *testing.T, b []byte) map[string]string {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	out := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				out[r.Record] = r.Expr
			}
		}
	}
	return out
}

// readRun returns a k6 NDJSON file's Metric lines, Point lines and the
// names of its Trend metrics.
func readRun(t *testing.T, path string) (metrics, points [][]byte, trends map[string]bool) {
	t.Helper()
	sc := bufio.NewScanner(fixtures.Open(t, filepath.FromSlash(path)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	trends = map[string]bool{}
	for sc.Scan() {
		line := bytes.Clone(sc.Bytes())
		if bytes.Contains(line, []byte(`"type":"Metric"`)) {
			var m struct {
				Data struct{ Name, Type string } `json:"data"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			trends[m.Data.Name] = m.Data.Type == "trend"
			metrics = append(metrics, line)
		} else if len(bytes.TrimSpace(line)) > 0 {
			points = append(points, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(metrics) == 0 || len(points) < 1000 {
		t.Fatalf("%s: %d Metric and %d Point lines", path, len(metrics), len(points))
	}
	return metrics, points, trends
}

// part is a list of point lines and, for each, the shard (0 or 1) that
// replays it.
type part struct {
	all   [][]byte
	shard []int
	half  [2][][]byte
}

func (p *part) add(line []byte, shard int) {
	p.all = append(p.all, line)
	p.shard = append(p.shard, shard)
	p.half[shard] = append(p.half[shard], line)
}

// split gives each shard half of the run's points, as two k6 instances
// with different network paths would: of every Trend series, shard A
// gets the samples at or below the series' median and shard B the slower
// ones, so each shard's own p95 is far from the run's and only summed
// histograms give it back; other series alternate point by point. (A
// series is the metric, every tag, and whether the value is zero, since a
// k6 Rate's zero and non-zero samples land in different series.) The
// first point of each series on each shard forms the priming part, so
// both shards hold their series before the measured windows begin.
func split(t *testing.T, lines [][]byte, trends map[string]bool) (priming, rest part) {
	t.Helper()
	type point struct {
		line []byte
		key  string
		v    float64
	}
	points := make([]point, 0, len(lines))
	values := map[string][]float64{}
	for _, line := range lines {
		var p struct {
			Metric string `json:"metric"`
			Data   struct {
				Value float64           `json:"value"`
				Tags  map[string]string `json:"tags"`
			} `json:"data"`
		}
		if err := json.Unmarshal(line, &p); err != nil {
			t.Fatalf("point line %q: %v", line, err)
		}
		key := p.Metric + labelsBut(p.Data.Tags, "") + fmt.Sprint(p.Data.Value != 0)
		points = append(points, point{line, key, p.Data.Value})
		if trends[p.Metric] {
			values[key] = append(values[key], p.Data.Value)
		}
	}
	median := map[string]float64{}
	for k, vs := range values {
		sort.Float64s(vs)
		median[k] = vs[(len(vs)-1)/2]
	}
	seen := map[string]int{}
	primed := map[string][2]bool{}
	for _, p := range points {
		shard := seen[p.key] % 2
		if m, ok := median[p.key]; ok {
			shard = 0
			if p.v > m {
				shard = 1
			}
		}
		seen[p.key]++
		pr := primed[p.key]
		if !pr[shard] {
			pr[shard] = true
			primed[p.key] = pr
			priming.add(p.line, shard)
			continue
		}
		rest.add(p.line, shard)
	}
	return priming, rest
}

// chunkReplayer returns a function that replays lines into an exporter
// as one file of its own (named after name, numbered in order), as a
// live follower would have read them.
func chunkReplayer(t *testing.T) func(srv *exporter.Server, name string, lines [][]byte) {
	chunkDir, chunk := t.TempDir(), 0
	return func(srv *exporter.Server, name string, lines [][]byte) {
		if len(lines) == 0 {
			return
		}
		chunk++
		p := filepath.Join(chunkDir, fmt.Sprintf("%03d-%s", chunk, name))
		if err := os.WriteFile(p, bytes.Join(append(lines, nil), []byte("\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		// A chunk of Metric lines alone holds no sample: ReplayFile says
		// so, and the definitions are taken all the same.
		if _, err := srv.ReplayFile(p); err != nil && !bytes.Contains(lines[0], []byte(`"type":"Metric"`)) {
			t.Fatal(err)
		}
	}
}
