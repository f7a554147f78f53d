package backtest

import (
	"bufio"
	"bytes"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/rules"
	"github.com/envelope-dev/envelope/internal/simulate"
)

// capture records the backtest's samples by timestamp, with the family
// (metric name without a classic histogram's suffix) of each.
type capture map[int64]map[string]captured

type captured struct {
	family string
	v      float64
}

func (c capture) Append(l labels.Labels, t int64, v float64) error {
	if c[t] == nil {
		c[t] = map[string]captured{}
	}
	n := l.Get(model.MetricNameLabel)
	if l.Has("le") {
		n = strings.TrimSuffix(n, "_bucket")
	} else if m, ok := strings.CutSuffix(n, "_sum"); ok {
		n = m
	} else if m, ok := strings.CutSuffix(n, "_count"); ok {
		n = m
	}
	c[t][l.String()] = captured{n, v}
	return nil
}

// AppendHistogram records a native histogram by its count and sum, under
// the series' labels with a suffix the classic series cannot have.
func (c capture) AppendHistogram(l labels.Labels, t int64, fh *histogram.FloatHistogram) error {
	if c[t] == nil {
		c[t] = map[string]captured{}
	}
	n := l.Get(model.MetricNameLabel)
	c[t][l.String()+" native count"] = captured{n, fh.Count}
	c[t][l.String()+" native sum"] = captured{n, fh.Sum}
	c[t][l.String()+" native buckets"] = captured{n, nativeTotal(fh.ZeroCount, fh.PositiveBuckets)}
	return nil
}

func nativeTotal(zero float64, buckets []float64) float64 {
	for _, b := range buckets {
		zero += b
	}
	return zero
}

// The backtest stores what its exporter serves; this holds the stored
// series to an exporter fed independently. A second exporter.Server is
// fed every point of the run (not only the families the rules read) by
// this test's own reader, scrape by scrape; its k6 Gatherer is read at
// every virtual scrape time and converted by this test's own code; every
// series of the families the rules read must be the same series with the
// same value at every scrape, in both directions. At the end, the last
// scrape must equal what a third exporter serves after replaying the
// whole file through its own replay path.
func TestSeriesSameAsExporter(t *testing.T) {
	env, err := envelope.ReadFile(filepath.Join("..", "demo", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	realRun := fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz")
	sim := filepath.Join(t.TempDir(), "sim.ndjson.gz")
	if err := simulate.WriteFile(sim, env, simulate.Options{Seed: 31, Duration: 3 * time.Minute, ErrorRate: 0.02}); err != nil {
		t.Fatal(err)
	}
	ruleFiles, err := RuleFiles(filepath.Join("..", "..", "rules"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{realRun, sim} {
		t.Run(filepath.Base(path), func(t *testing.T) { compareWithExporter(t, env, ruleFiles, path) })
	}
}

func compareWithExporter(t *testing.T, env *envelope.Envelope, ruleFiles []string, path string) {
	o := Options{Tail: time.Minute}
	pr, err := prepare(env, ruleFiles, path, &o)
	if err != nil {
		t.Fatal(err)
	}
	// The slots and families come from the backtest before it is run.
	slotOf := func(p *k6.Point) int { return pr.r.slot(p.Time) }
	t0 := pr.r.t0
	want := capture{}
	if err := pr.r.write(want, pr.up, pr.lastSlot); err != nil {
		t.Fatal(err)
	}
	// The families the rules read, whether or not the backtest stored any.
	families := pr.r.readsFamily
	stored := map[string]bool{}
	for _, ser := range want {
		for _, c := range ser {
			stored[c.family] = true
		}
	}
	for _, f := range []string{"k6_http_reqs_total", "k6_http_req_failed_total", "k6_vus", "k6_http_req_duration_seconds"} {
		if !stored[f] || !families(f) {
			t.Fatalf("backtest stored no %s series", f)
		}
	}

	srv, err := exporter.New(exporter.Config{Envelope: env, DisableExporterMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	defs, points := readAll(t, path)
	for _, d := range defs {
		srv.DefineMetric(d)
	}
	// Feed each point before the first scrape at or after its time; a
	// stable sort keeps k6's order within a scrape.
	sort.SliceStable(points, func(i, j int) bool { return slotOf(&points[i]) < slotOf(&points[j]) })
	next := 0
	compared := 0
	for slot := 1; slot <= pr.lastSlot; slot++ {
		for next < len(points) && slotOf(&points[next]) <= slot {
			srv.IngestPoint(&points[next])
			next++
		}
		ts := t0.Add(time.Duration(slot) * o.Scrape).UnixMilli()
		got := gathered(t, srv, families)
		exp := map[string]float64{}
		for k, c := range want[ts] {
			if c.family != "up" && families(c.family) { // up is synthetic
				exp[k] = c.v
			}
		}
		for k, v := range exp {
			g, ok := got[k]
			if !ok {
				t.Fatalf("scrape %d: backtest has %s = %v, the exporter does not expose it", slot, k, v)
			}
			if !near(g, v) {
				t.Fatalf("scrape %d: %s: backtest %v, exporter %v", slot, k, v, g)
			}
			compared++
		}
		for k, v := range got {
			if _, ok := exp[k]; !ok {
				t.Fatalf("scrape %d: the exporter exposes %s = %v, the backtest does not model it", slot, k, v)
			}
		}
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
	if next != len(points) {
		t.Fatalf("%d of %d points fed", next, len(points))
	}
	last := gathered(t, srv, families)
	replayed, err := exporter.New(exporter.Config{Envelope: env, DisableExporterMetrics: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replayed.ReplayFile(path); err != nil {
		t.Fatal(err)
	}
	if whole := gathered(t, replayed, families); !maps.EqualFunc(last, whole, near) {
		t.Fatalf("last scrape (%d series) differs from the exporter's replay of the whole file (%d series)", len(last), len(whole))
	}
	t.Logf("%d samples over %d scrapes, %d families: the same", compared, pr.lastSlot, len(stored)-1)
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// gathered reads the exporter's k6 Gatherer as the backtest's series:
// counters and gauges by value, histograms as their classic _bucket, _sum
// and _count series; empty label values are absent, as in Prometheus.
func gathered(t *testing.T, srv *exporter.Server, families func(string) bool) map[string]float64 {
	t.Helper()
	mfs, err := srv.K6Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !families(mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			lb := labels.NewBuilder(labels.EmptyLabels())
			for _, lp := range m.GetLabel() {
				if lp.GetValue() != "" {
					lb.Set(lp.GetName(), lp.GetValue())
				}
			}
			put := func(name string, v float64, extra ...string) {
				b := labels.NewBuilder(lb.Labels()).Set(model.MetricNameLabel, name)
				for i := 0; i+1 < len(extra); i += 2 {
					b.Set(extra[i], extra[i+1])
				}
				out[b.Labels().String()] = v
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				put(mf.GetName(), m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				put(mf.GetName(), m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					if math.IsInf(b.GetUpperBound(), 1) {
						continue
					}
					put(mf.GetName()+"_bucket", float64(b.GetCumulativeCount()), "le", rules.LeValue(b.GetUpperBound()))
				}
				put(mf.GetName()+"_bucket", float64(h.GetSampleCount()), "le", "+Inf")
				put(mf.GetName()+"_sum", h.GetSampleSum())
				put(mf.GetName()+"_count", float64(h.GetSampleCount()))
				if len(h.GetPositiveSpan()) > 0 || h.GetZeroCount() > 0 {
					key := labels.NewBuilder(lb.Labels()).Set(model.MetricNameLabel, mf.GetName()).Labels().String()
					out[key+" native count"] = float64(h.GetSampleCount())
					out[key+" native sum"] = h.GetSampleSum()
					var c, total int64
					for _, d := range h.GetPositiveDelta() {
						c += d
						total += c
					}
					out[key+" native buckets"] = float64(total + int64(h.GetZeroCount()))
				}
			default:
				t.Fatalf("%s: type %v not modelled", mf.GetName(), mf.GetType())
			}
		}
	}
	return out
}

// readAll reads a run's Metric definitions and points.
func readAll(t *testing.T, path string) ([]*k6.MetricDef, []k6.Point) {
	t.Helper()
	sc := bufio.NewScanner(fixtures.Open(t, path))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var defs []*k6.MetricDef
	var points []k6.Point
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var p k6.Point
		isPoint, def, err := k6.ParseNDJSONLine(b, &p)
		if err != nil {
			t.Fatal(err)
		}
		if isPoint {
			p.Tags = maps.Clone(p.Tags) // the parser may reuse the map
			points = append(points, p)
		} else if def != nil {
			defs = append(defs, def)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return defs, slices.Clip(points)
}

func TestFamiliesRead(t *testing.T) {
	for _, c := range []struct {
		expr string
		want map[string]bool
	}{
		{`rate(k6_http_reqs_total[1m]) / sum(k6_vus)`, map[string]bool{"k6_http_reqs_total": true, "k6_vus": true}},
		{`histogram_quantile(0.9, rate(k6_x_seconds_bucket{le="1"}[5m]))`, map[string]bool{"k6_x_seconds_bucket": true}},
		{`sum({__name__=~"k6_.*"})`, map[string]bool{anyFamily: true}},
	} {
		got := familiesRead([]*ruleGroup{{rules: []*rule{{expr: c.expr}}}})
		if !maps.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.expr, got, c.want)
		}
	}
	r := &replay{reads: map[string]bool{"k6_x_seconds_bucket": true}}
	if !r.readsFamily("k6_x_seconds") || r.readsFamily("k6_y_seconds") {
		t.Error("readsFamily: a classic bucket selector reads its family and only it")
	}
}
