package k6

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// reference recomputes a trend's count, avg and p(95) from kept points, the
// slow obvious way, for the window and group tests.
func reference(points []Point, keep func(Point) bool) (n int, avg, p95 float64) {
	var vals []float64
	sum := 0.0
	for _, p := range points {
		if keep(p) {
			vals = append(vals, p.Value)
			sum += p.Value
		}
	}
	slices.Sort(vals)
	if len(vals) == 0 {
		return 0, 0, 0
	}
	return len(vals), sum / float64(len(vals)), stats.Quantile(vals, 0.95)
}

func TestWindows(t *testing.T) {
	all := mustLoad(t, fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"), LoadOptions{KeepPoints: true})
	// A window counts from the test's start: one second before the first
	// vus sample, k6 sampling vus every second from it.
	var start time.Time
	for _, p := range all.Points {
		if p.Metric == "vus" && (start.IsZero() || p.Time.Add(-time.Second).Before(start)) {
			start = p.Time.Add(-time.Second)
		}
	}
	cases := []struct {
		name     string
		opts     LoadOptions
		from, to time.Duration // expected window relative to start; to 0 = end
	}{
		{"skip warm-up", LoadOptions{SkipWarmup: 3 * time.Second}, 3 * time.Second, 0},
		{"from/to", LoadOptions{From: 2 * time.Second, To: 5 * time.Second}, 2 * time.Second, 5 * time.Second},
		{"skip beats from", LoadOptions{SkipWarmup: 4 * time.Second, From: time.Second}, 4 * time.Second, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Stats = []string{"count", "avg", "p(95)"}
			r := mustLoad(t, fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"), c.opts)
			lo := start.Add(c.from)
			hi := all.End.Add(time.Nanosecond)
			if c.to > 0 {
				hi = start.Add(c.to)
			}
			in := func(p Point) bool { return !p.Time.Before(lo) && p.Time.Before(hi) }
			n, avg, p95 := reference(all.Points, func(p Point) bool { return p.Metric == "http_req_duration" && in(p) })
			m := r.Metrics["http_req_duration"]
			if n == 0 || n == 128 {
				t.Fatalf("window keeps %d of 128 samples: not a useful test", n)
			}
			if m.Values["count"] != float64(n) || m.Values["avg"] != avg || m.Values["p(95)"] != p95 {
				t.Errorf("got %v, want count %d avg %v p95 %v", m.Values, n, avg, p95)
			}
			reqs, _, _ := reference(all.Points, func(p Point) bool { return p.Metric == "http_reqs" && in(p) })
			if got := r.Metrics["http_reqs"].Values["count"]; got != float64(reqs) {
				t.Errorf("http_reqs count %v, want %d", got, reqs)
			}
			// Counters' rate is over the window's length.
			if want := float64(reqs) / r.Duration.Seconds(); math.Abs(r.Metrics["http_reqs"].Values["rate"]-want) > 1e-9 {
				t.Errorf("rate %v, want %v", r.Metrics["http_reqs"].Values["rate"], want)
			}
			if !r.Start.Equal(lo) {
				t.Errorf("window start %v, want %v", r.Start, lo)
			}
		})
	}
}

func TestGroupBy(t *testing.T) {
	all := mustLoad(t, fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"), LoadOptions{KeepPoints: true})
	r := mustLoad(t, fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"), LoadOptions{GroupBy: "scenario", Stats: []string{"count", "avg", "p(95)"}})
	if len(r.Groups) != 2 {
		t.Fatalf("groups %v, want arrival and closed", slices.Collect(func(yield func(string) bool) {
			for g := range r.Groups {
				yield(g)
			}
		}))
	}
	total := 0.0
	for g, ms := range r.Groups {
		n, avg, p95 := reference(all.Points, func(p Point) bool { return p.Metric == "http_req_duration" && p.Tags["scenario"] == g })
		m := ms["http_req_duration"]
		if m == nil || m.Values["count"] != float64(n) || m.Values["avg"] != avg || m.Values["p(95)"] != p95 {
			t.Errorf("group %s: %+v, want count %d avg %v p95 %v", g, m, n, avg, p95)
		}
		sub := ms["http_req_duration{expected_response:true}"]
		ns, _, _ := reference(all.Points, func(p Point) bool {
			return p.Metric == "http_req_duration" && p.Tags["scenario"] == g && p.Tags["expected_response"] == "true"
		})
		if sub == nil || sub.Values["count"] != float64(ns) {
			t.Errorf("group %s sub-metric: %+v, want count %d", g, sub, ns)
		}
		total += ms["http_reqs"].Values["count"]
	}
	if total != r.Metrics["http_reqs"].Values["count"] {
		t.Errorf("groups' http_reqs sum to %v, run has %v", total, r.Metrics["http_reqs"].Values["count"])
	}
}

// Sketch mode, chosen or forced by the memory budget: every quantile within
// 0.5% of the exact one, counts, min and max exact, and the mode reported.
func TestSketchMode(t *testing.T) {
	st := []string{"count", "min", "max", "avg", "med", "p(90)", "p(95)", "p(99)", "p(99.9)"}
	exact := mustLoad(t, fixtures.Path(t, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz"), LoadOptions{Stats: st})
	for _, opts := range []LoadOptions{{Mode: ModeSketch}, {MemoryBudget: 2048}} {
		opts.Stats = st
		r := mustLoad(t, fixtures.Path(t, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz"), opts)
		if r.Mode != ModeSketch {
			t.Fatalf("%+v: mode %s", opts, r.Mode)
		}
		checked := 0
		for name, em := range exact.Metrics {
			sm := r.Metrics[name]
			if em.Type != Trend {
				if fmt.Sprint(sm.Values) != fmt.Sprint(em.Values) {
					t.Errorf("%s: %v, want %v", name, sm.Values, em.Values)
				}
				continue
			}
			if sm.Mode != ModeSketch {
				t.Errorf("%s mode %s", name, sm.Mode)
			}
			for k, ev := range em.Values {
				sv := sm.Values[k]
				tol := stats.SketchAlpha * math.Abs(ev)
				if k == "count" || k == "min" || k == "max" {
					tol = 0
				}
				if k == "avg" {
					tol = 1e-9 * math.Abs(ev)
				}
				if math.Abs(sv-ev) > tol {
					t.Errorf("%s %s: sketch %v, exact %v", name, k, sv, ev)
				}
				checked++
			}
		}
		if checked < 50 {
			t.Errorf("only %d trend values checked", checked)
		}
	}
}

// Every k6 CSV timeFormat gives the same statistics and the same start (to
// the format's resolution).
func TestCSVTimeFormats(t *testing.T) {
	src, err := os.ReadFile("testdata/runB-out.csv")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(src)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	formats := map[string]func(time.Time) string{
		"unix":         func(t time.Time) string { return fmt.Sprint(t.Unix()) },
		"unix_milli":   func(t time.Time) string { return fmt.Sprint(t.UnixMilli()) },
		"unix_micro":   func(t time.Time) string { return fmt.Sprint(t.UnixMicro()) },
		"unix_nano":    func(t time.Time) string { return fmt.Sprint(t.UnixNano()) },
		"rfc3339":      func(t time.Time) string { return t.Format(time.RFC3339) },
		"rfc3339_nano": func(t time.Time) string { return t.Format(time.RFC3339Nano) },
		"rfc3339 zone": func(t time.Time) string { return t.In(time.FixedZone("", -5*3600)).Format(time.RFC3339Nano) },
	}
	ref := mustLoad(t, "testdata/runB-out.csv", LoadOptions{})
	res := map[string]time.Duration{"unix": time.Second, "rfc3339": time.Second, "unix_milli": time.Millisecond, "unix_micro": time.Microsecond}
	for name, f := range formats {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			w := csv.NewWriter(&b)
			for i, rec := range recs {
				if i > 0 {
					ts, err := time.Parse(time.RFC3339Nano, rec[1])
					if err != nil {
						t.Fatal(err)
					}
					rec = slices.Clone(rec)
					rec[1] = f(ts)
				}
				if err := w.Write(rec); err != nil {
					t.Fatal(err)
				}
			}
			w.Flush()
			r, err := LoadReader(name+".csv", &b, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d := ref.Start.Sub(r.Start); d < 0 || d > res[name] {
				t.Errorf("start %v, want %v (resolution %v)", r.Start, ref.Start, res[name])
			}
			for _, n := range []string{"http_req_duration", "iteration_duration", "http_reqs", "checks"} {
				if fmt.Sprint(r.Metrics[n].Values["p(95)"], r.Metrics[n].Values["count"], r.Metrics[n].Values["passes"]) !=
					fmt.Sprint(ref.Metrics[n].Values["p(95)"], ref.Metrics[n].Values["count"], ref.Metrics[n].Values["passes"]) {
					t.Errorf("%s: %v, want %v", n, r.Metrics[n].Values, ref.Metrics[n].Values)
				}
			}
		})
	}
}

// CSV extra_tags and metadata columns split into tags and metadata.
func TestCSVExtraTagsAndMetadata(t *testing.T) {
	r := mustLoad(t, "testdata/runB-out.csv", LoadOptions{KeepPoints: true, GroupBy: "scenario_kind"})
	var found bool
	for _, p := range r.Points {
		if p.Metric == "http_reqs" && p.Tags["scenario_kind"] == "open" && p.Metadata["vu"] != "" && p.Metadata["iter"] != "" {
			found = true
			break
		}
	}
	if !found {
		t.Error("no http_reqs point with extra tag scenario_kind and vu/iter metadata")
	}
	if r.Groups["open"]["http_reqs"] == nil {
		t.Errorf("no group for the extra tag: %v", strings.Join(sortedNames(r.Groups), ","))
	}
}

// Stdin-like readers and the "-" path go through the same loader.
func TestLoadReaderGzip(t *testing.T) {
	f, err := os.Open(fixtures.Path(t, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // only read
	r, err := LoadReader("-", f, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != "-" || r.Format != FormatNDJSON || r.Metrics["http_reqs"].Values["count"] != 128 {
		t.Errorf("got %s %s %v", r.Source, r.Format, r.Metrics["http_reqs"].Values)
	}
}
