package k6

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// Trends recomputed from a run's point streams equal k6's own summary of
// the same run to the last printed digit (float64 equality); counters,
// rates and gauges equal exactly too, except a counter's rate, whose
// duration a point stream only approximates (see setBounds). These runs
// open with a ramping-arrival-rate scenario at 5 iterations/s, whose
// first iteration starts 0.2 s into the test: no sample shows that wait,
// so their span is k6's duration less it, and their rates 3% above k6's.
func TestPointStreamsMatchSummary(t *testing.T) {
	runB := []string{"avg", "min", "med", "max", "p(90)", "p(95)", "p(99)", "p(99.9)", "count"}
	cases := []struct {
		stream, summary string
		stats           []string
		rateTol         float64 // relative tolerance of counters' rate
	}{
		{"runA-out.ndjson", "runA-summary-export.json", nil, 0.032},
		{"runA-out.csv", "runA-summary-export.json", nil, 0.15}, // unix-second timestamps: the span is known to ±1 s of 7
		{"runB-out.ndjson.gz", "runB-summary-export.json", runB, 0.032},
		{"runB-out.csv", "runB-summary-export.json", runB, 0.032},
	}
	for _, c := range cases {
		for _, workers := range []int{1, 2} {
			t.Run(c.stream, func(t *testing.T) {
				want := mustLoad(t, testFile(t, c.summary), LoadOptions{})
				csv := strings.HasSuffix(c.stream, ".csv")
				opts := LoadOptions{Stats: c.stats, Workers: workers}
				if csv {
					// CSV carries no types: custom metrics borrow them.
					opts.Types = typesFrom(want)
				}
				got := mustLoad(t, testFile(t, c.stream), opts)
				if got.Mode != ModeExact {
					t.Errorf("mode %s", got.Mode)
				}
				compared := 0
				for name, wm := range want.Metrics {
					gm := got.Metrics[name]
					if gm == nil {
						// CSV has no Metric lines, so no declared sub-metrics.
						if csv && wm.Tags != nil && name != implicitSub {
							continue
						}
						t.Errorf("%s: missing", name)
						continue
					}
					if gm.Type != wm.Type {
						t.Errorf("%s: type %s, want %s", name, gm.Type, wm.Type)
						continue
					}
					for k, wv := range wm.Values {
						gv, ok := gm.Values[k]
						if !ok {
							t.Errorf("%s %s: missing", name, k)
							continue
						}
						compared++
						if k == "rate" && wm.Type == Counter {
							if math.Abs(gv-wv) > c.rateTol*math.Abs(wv) {
								t.Errorf("%s rate %v, want %v ±%g", name, gv, wv, c.rateTol)
							}
							continue
						}
						if gv != wv {
							t.Errorf("%s %s = %v, want %v", name, k, gv, wv)
						}
					}
				}
				if compared < 80 {
					t.Errorf("only %d values compared", compared)
				}
				// Thresholds a Metric line declares are evaluated on the
				// metric and agree with k6's verdicts.
				evaluated := 0
				for name, gm := range got.Metrics {
					for expr, ok := range gm.Thresholds {
						evaluated++
						if wok, has := want.Metrics[name].Thresholds[expr]; !has || wok != ok {
							t.Errorf("%s threshold %q: passed %t, k6 says %t (present %t)", name, expr, ok, wok, has)
						}
					}
				}
				if !csv && evaluated < 5 {
					t.Errorf("only %d thresholds evaluated", evaluated)
				}
				for name, wc := range want.Checks {
					if gc := got.Checks[name]; gc.Passes != wc.Passes || gc.Fails != wc.Fails {
						t.Errorf("check %q: %+v, want %+v", name, gc, wc)
					}
				}
				// The run's span: k6's test duration less the first
				// arrival's wait, within 0.1% (unix-second CSV: within 1 s).
				tol := want.Duration / 1000
				if strings.HasPrefix(c.stream, "runA-out.csv") {
					tol = time.Second
				}
				firstArrival := time.Second / 5
				if d := got.Duration - (want.Duration - firstArrival); d < -tol || d > tol {
					t.Errorf("duration %v, want %v less %v ±%v", got.Duration, want.Duration, firstArrival, tol)
				}
			})
		}
	}
}

// Both point formats of one run give identical statistics for every metric
// they share, NDJSON (nanosecond times) and CSV (6-decimal values).
func TestNDJSONAndCSVAgree(t *testing.T) {
	stats := []string{"avg", "min", "med", "max", "p(99.9)", "count"}
	a := mustLoad(t, fixtures.Path(t, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz"), LoadOptions{Stats: stats})
	b := mustLoad(t, "testdata/runB-out.csv", LoadOptions{Stats: stats, Types: typesFrom(a)})
	for name, mb := range b.Metrics {
		ma := a.Metrics[name]
		if ma == nil {
			t.Errorf("%s only in CSV", name)
			continue
		}
		for k, v := range mb.Values {
			if ma.Values[k] != v && !(k == "rate" && math.Abs(ma.Values[k]-v) < 1e-9*v) {
				t.Errorf("%s %s: ndjson %v, csv %v", name, k, ma.Values[k], v)
			}
		}
	}
	if a.Start != b.Start {
		t.Errorf("start %v vs %v", a.Start, b.Start)
	}
}

// Without types, a CSV's unknown metrics are trends (every statistic is
// available); built-ins keep their types.
func TestCSVUnknownMetricsAreTrends(t *testing.T) {
	r := mustLoad(t, "testdata/runA-out.csv", LoadOptions{Stats: []string{"count", "avg"}})
	for name, typ := range map[string]MetricType{"custom_errors": Trend, "custom_gauge": Trend, "http_reqs": Counter, "vus": Gauge, "checks": Rate} {
		if m := r.Metrics[name]; m == nil || m.Type != typ {
			t.Errorf("%s: %+v, want type %s", name, m, typ)
		}
	}
	if got := r.Metrics["custom_errors"].Values["count"]; got != 54 {
		t.Errorf("custom_errors samples %v, want 54", got)
	}
}

// typesFrom returns the metric types and contents of a loaded run, keyed
// by metric name, for LoadOptions.Types: a CSV (which carries no types)
// can borrow them from the same test's summary.
func typesFrom(r *Run) map[string]MetricDef {
	out := map[string]MetricDef{}
	for _, m := range r.Metrics {
		if _, ok := out[m.Parent]; ok || m.Tags != nil && r.Metrics[m.Parent] != nil {
			continue
		}
		out[m.Parent] = MetricDef{Name: m.Parent, Type: m.Type, Contains: m.Contains}
	}
	return out
}

// testFile is the path of a k6 output these tests read by name: the real
// outputs other packages read too are kept once in the top-level testdata
// (internal/fixtures), the rest in this package's.
func testFile(tb testing.TB, name string) string {
	tb.Helper()
	if rel, ok := map[string]string{
		"runA-out.ndjson":          "k6/generated-v2.2.0/runA-default/runA-out.ndjson",
		"runA-summary-export.json": "k6/generated-v2.2.0/runA-default/runA-summary-export.json",
		"runB-out.ndjson.gz":       "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz",
	}[name]; ok {
		return fixtures.Path(tb, rel)
	}
	return filepath.Join("testdata", name)
}
