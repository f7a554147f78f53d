package k6

import (
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

func mustLoad(t testing.TB, path string, opts LoadOptions) *Run {
	t.Helper()
	r, err := Load(path, opts)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return r
}

// Every summary shape of the same run must load to the same figures: the
// legacy export and handleSummary data of runA and runB; the
// machine-readable summary as k6 writes it (snake_case, p95) and as its
// schema says (camelCase, p(95)).
func TestSummaryShapesAgree(t *testing.T) {
	cases := []struct {
		a, b           string
		fa, fb         Format
		sameThresholds bool
	}{
		{"runA-summary-export.json", "runA-handlesummary-data.json", FormatSummaryExport, FormatHandleSummary, true},
		{"runB-summary-export.json", "runB-handlesummary-data.json", FormatSummaryExport, FormatHandleSummary, true},
		{"runC-summary-export-machine-readable.json", "runC-machine-readable-schema.json", FormatMachineReadable, FormatMachineReadable, true},
		{"runC-summary-export-machine-readable.json", "runC-handlesummary-data.json", FormatMachineReadable, FormatMachineReadable, true},
	}
	for _, c := range cases {
		t.Run(c.a+"~"+c.b, func(t *testing.T) {
			ra := mustLoad(t, testFile(t, c.a), LoadOptions{})
			rb := mustLoad(t, testFile(t, c.b), LoadOptions{})
			if ra.Format != c.fa || rb.Format != c.fb {
				t.Fatalf("formats %s, %s; want %s, %s", ra.Format, rb.Format, c.fa, c.fb)
			}
			// summary-export's duration is derived from count/rate: equal
			// to the microsecond.
			if d := ra.Duration - rb.Duration; d < -time.Microsecond || d > time.Microsecond || ra.Duration <= 0 {
				t.Errorf("durations %v vs %v", ra.Duration, rb.Duration)
			}
			if len(ra.Metrics) != len(rb.Metrics) {
				t.Errorf("%d metrics vs %d", len(ra.Metrics), len(rb.Metrics))
			}
			for name, ma := range ra.Metrics {
				mb, ok := rb.Metrics[name]
				if !ok {
					t.Errorf("%s missing from %s", name, c.b)
					continue
				}
				if ma.Type != mb.Type || ma.Contains != mb.Contains || ma.Parent != mb.Parent || !maps.Equal(ma.Tags, mb.Tags) {
					t.Errorf("%s: %s/%s/%v vs %s/%s/%v", name, ma.Type, ma.Parent, ma.Tags, mb.Type, mb.Parent, mb.Tags)
				}
				for k, va := range ma.Values {
					vb, ok := mb.Values[k]
					// Counter rates are recomputed where a shape lacks them.
					if !ok || (va != vb && !(k == "rate" && ma.Type == Counter && math.Abs(va-vb) <= 1e-9*math.Abs(va))) {
						t.Errorf("%s %s: %v vs %v", name, k, va, vb)
					}
				}
				if len(ma.Values) != len(mb.Values) {
					t.Errorf("%s: values %v vs %v", name, ma.Values, mb.Values)
				}
				if c.sameThresholds && !maps.Equal(ma.Thresholds, mb.Thresholds) {
					t.Errorf("%s thresholds: %v vs %v", name, ma.Thresholds, mb.Thresholds)
				}
			}
			if !maps.EqualFunc(ra.Checks, rb.Checks, func(x, y Check) bool { return x.Passes == y.Passes && x.Fails == y.Fails }) {
				t.Errorf("checks %v vs %v", ra.Checks, rb.Checks)
			}
		})
	}
}

// Spot values straight from the files, and the normalizations: summary
// export's inverted threshold booleans, Rate "value" → "rate", machine
// readable p95 → p(95), matches/total → passes/fails.
func TestSummaryValues(t *testing.T) {
	type want struct {
		metric, stat string
		v            float64
	}
	cases := []struct {
		file     string
		duration time.Duration
		k6       string
		values   []want
		passed   map[string]map[string]bool
	}{
		{"runA-summary-export.json", 6795187663, "", []want{
			{"http_req_duration", "p(95)", 1.1224862},
			{"http_req_duration{expected_response:true}", "avg", 0.9225576621621617},
			{"http_reqs{status:404}", "count", 54},
			{"http_req_failed", "rate", 0.421875},
			{"http_req_failed", "passes", 54},
			{"vus_max", "value", 3},
		}, map[string]map[string]bool{
			"http_req_duration":     {"p(95)<500": true, "p(99.9)<1000": true},
			"http_reqs{status:404}": {"count<5": false},
		}},
		{"runB-summary-export.json", 0, "", []want{
			{"http_req_duration", "count", 128},
		}, nil},
		{"runC-summary-export-machine-readable.json", 6795933080, "2.2.0", []want{
			{"http_req_duration", "p(95)", 1.0672096999999998},
			{"http_req_duration", "p(90)", 1.0143943},
			{"http_req_failed", "passes", 54},
			{"http_req_failed", "fails", 74},
			{"checks", "passes", 182},
			{"http_reqs", "rate", 128 / 6.79593308},
		}, nil},
		{"runC-machine-readable-schema.json", 6795933080, "2.2.0", []want{
			{"http_req_duration", "p(95)", 1.0672096999999998},
		}, nil},
		{"runD-summary-export-machine-readable-full.json", 0, "2.2.0", []want{
			{"http_req_blocked", "p(95)", 0.6750237},
			{"http_reqs", "count", 128},
		}, nil},
		{"ictu-handlesummary-data.json", 40803440334, "", []want{
			{"og1", "p(98)", 295.4580357199999},
			{"og1", "count", 172},
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r := mustLoad(t, testFile(t, c.file), LoadOptions{})
			if c.duration != 0 && (r.Duration-c.duration > time.Microsecond || c.duration-r.Duration > time.Microsecond) {
				t.Errorf("duration %v, want %v", r.Duration, c.duration)
			}
			if r.K6Version != c.k6 {
				t.Errorf("k6 version %q, want %q", r.K6Version, c.k6)
			}
			if r.Mode != ModeSummary {
				t.Errorf("mode %s", r.Mode)
			}
			for _, w := range c.values {
				m := r.Metrics[w.metric]
				if m == nil {
					t.Errorf("no %s", w.metric)
					continue
				}
				if got, ok := m.Values[w.stat]; !ok || math.Abs(got-w.v) > 1e-12*math.Abs(w.v) {
					t.Errorf("%s %s = %v (present %t), want %v", w.metric, w.stat, got, ok, w.v)
				}
			}
			for name, th := range c.passed {
				if !maps.Equal(r.Metrics[name].Thresholds, th) {
					t.Errorf("%s thresholds %v, want %v", name, r.Metrics[name].Thresholds, th)
				}
			}
		})
	}
}

func TestSplitName(t *testing.T) {
	cases := []struct {
		in, parent string
		tags       map[string]string
	}{
		{"http_reqs", "http_reqs", nil},
		{"http_req_duration{expected_response:true}", "http_req_duration", map[string]string{"expected_response": "true"}},
		{"m{ a : 'b' , c:\"d:e\"}", "m", map[string]string{"a": "b", "c": "d:e"}},
		{"odd{", "odd{", nil},
	}
	for _, c := range cases {
		p, tags := SplitName(c.in)
		if p != c.parent || !maps.Equal(tags, c.tags) {
			t.Errorf("SplitName(%q) = %q %v, want %q %v", c.in, p, tags, c.parent, c.tags)
		}
	}
}

func TestForcedFormatMismatch(t *testing.T) {
	_, err := Load(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-summary-export.json"), LoadOptions{Format: FormatHandleSummary})
	if err == nil || !strings.Contains(err.Error(), "summary-export") {
		t.Fatalf("got %v, want a mismatch naming the real format", err)
	}
}
