package figures

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		in   string
		want Key
		err  string
	}{
		{in: "p95", want: Key{Figure: P95}},
		{in: "rps", want: Key{Figure: RPS}},
		{in: "auth_login.p95", want: Key{Endpoint: "auth_login", Figure: P95}},
		{in: "name=GET /a.b.median", want: Key{Endpoint: "name=GET /a.b", Figure: Median}},
		{in: "p42", err: "want one of rps, iterations_per_s"},
		{in: "auth_login.rps", err: "an endpoint has only avg, median, p95, p99 and max"},
		{in: ".p95", err: "empty endpoint name"},
	}
	for _, tt := range tests {
		got, err := ParseKey(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || got.String() != tt.in {
			t.Errorf("%q: %+v (%q), %v", tt.in, got, got.String(), err)
		}
	}
	if l := (Key{Endpoint: "auth_login", Figure: RPS}).Label("Login"); l != "Login throughput" {
		t.Errorf("label %q", l)
	}
	if l := (Key{Figure: ErrorRate}).Label(""); l != "aggregate error rate" {
		t.Errorf("label %q", l)
	}
}

// Every figure a run holds reads back through Set into the same run:
// a history stores Figures and reads them back with Set.
func TestFiguresRoundTrip(t *testing.T) {
	ci := &Interval{Low: 1, High: 2}
	r := Run{Requests: 1000, Iterations: 800, RPS: 50, IterationsPerS: 40, RequestsPerIter: 1.25, Failed: 3,
		Avg: 12, Median: 10, P95: 40, P99: 90, Max: 300, MedianCI: ci, P95CI: ci, P99CI: ci,
		Endpoints: map[string]Latency{"login": {Count: 200, Avg: 30, Median: 25, P95: 80, MedianCI: ci, P95CI: ci}, "name=home": {Count: 800, Max: 5}}}
	figs := r.Figures()
	if len(figs) != 4+5+3+1 {
		t.Fatalf("%d figures: %+v", len(figs), figs)
	}
	var back Run
	for _, f := range figs {
		back.Set(f.Key, f.Value)
	}
	if got := back.Figures(); !slices.EqualFunc(got, figs, func(a, b KeyValue) bool {
		return a.Key == b.Key && a.X == b.X && a.Count == b.Count && (a.CI == nil) == (b.CI == nil)
	}) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, figs)
	}
	if back.ErrorRate() != r.ErrorRate() || r.ErrorRate() != 0.003 {
		t.Errorf("error rate %v, want %v", back.ErrorRate(), r.ErrorRate())
	}
	if _, ok := r.Value(Key{Endpoint: "login", Figure: P99}); ok {
		t.Error("a statistic the run lacks is present")
	}
	if _, ok := (&Run{RPS: 5}).Value(Key{Figure: IterationsPerS}); ok {
		t.Error("the iteration rate of a run without iterations is present")
	}
}

// A run's own sampling error: a rate's is its count's, a percentile's
// the one its 95% interval says, any other's unknown.
func TestLogVar(t *testing.T) {
	if v := (Value{X: 50, Count: 400}).LogVar(RPS); v != 1.0/400 {
		t.Errorf("rate: %v", v)
	}
	lo, hi := 100*math.Exp(-1.959964*0.02), 100*math.Exp(1.959964*0.02)
	if v := (Value{X: 100, CI: &Interval{Low: lo, High: hi}}).LogVar(P95); math.Abs(v-0.0004) > 1e-9 {
		t.Errorf("percentile: %v, want 0.0004", v)
	}
	for _, v := range []float64{(Value{X: 100}).LogVar(P95), (Value{X: 1, Count: 5}).LogVar(Avg), (Value{X: 50}).LogVar(RPS)} {
		if !math.IsNaN(v) {
			t.Errorf("unknown error read as %v", v)
		}
	}
	base, typical := Baseline([]Run{{RPS: 50, Requests: 300}, {RPS: 60, Requests: 500}, {}}, Key{Figure: RPS})
	if len(base) != 2 || math.Abs(typical.X-math.Sqrt(50*60)) > 1e-12 || typical.LogVar != 1.0/400 {
		t.Errorf("baseline %+v, typical %+v", base, typical)
	}
}

// The loader's statistics of a point file and FromTimedSamples (what
// the simulator draws runs with) are one rule; FromSamples, without the
// samples' times, has the same figures and the order-statistic
// intervals, which the slow drift of these samples widens in the
// loader's.
func TestFromSamplesIsTheLoaders(t *testing.T) {
	var samples []sample
	var xs []float64
	var times []int64
	var sum float64
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 500 {
		x := 10 + float64(i*37%101) + float64(i)/7
		xs = append(xs, x)
		times = append(times, t0.Add(time.Duration(2*i+1)*time.Second).UnixNano())
		sum += x
		samples = append(samples, sample{metric: "http_reqs", value: 1}, sample{metric: "http_req_duration", value: x})
	}
	r := readNDJSON(t, ndjson(samples), "")
	got, want := r.Aggregate(), FromTimedSamples(xs, times)
	slices.Sort(xs)
	untimed := FromSamples(xs, sum)
	if untimed.P95 != want.P95 || untimed.Avg != want.Avg || untimed.P95CI == nil || !(untimed.P95CI.High-untimed.P95CI.Low < want.P95CI.High-want.P95CI.Low) {
		t.Errorf("FromSamples %+v %+v, FromTimedSamples %+v %+v", untimed, untimed.P95CI, want, want.P95CI)
	}
	same := func(a, b *Interval) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	if want.Count != 500 || got.Avg != want.Avg || got.Median != want.Median || got.P95 != want.P95 || got.P99 != want.P99 || got.Max != want.Max ||
		!same(got.MedianCI, want.MedianCI) || !same(got.P95CI, want.P95CI) || !same(got.P99CI, want.P99CI) || want.P95CI == nil {
		t.Errorf("loader %+v\nFromSamples %+v", got, want)
	}
	// 500 samples reach no p99 interval: 5 lie above it.
	if want.P99CI != nil {
		t.Errorf("p99 interval from 500 samples: %+v", want.P99CI)
	}
	if q := stats.Quantile(xs, 0.95); want.P95 != Round(q) {
		t.Errorf("p95 %v, k6's formula %v", want.P95, q)
	}
}

func TestVUsOf(t *testing.T) {
	gauge := func(vals map[string]float64) *k6.Metric { return &k6.Metric{Type: k6.Gauge, Values: vals} }
	tests := []struct {
		name    string
		metrics map[string]*k6.Metric
		want    int
	}{
		{"vus_max max", map[string]*k6.Metric{"vus_max": gauge(map[string]float64{"value": 50, "max": 60}), "vus": gauge(map[string]float64{"max": 40})}, 60},
		{"vus_max value", map[string]*k6.Metric{"vus_max": gauge(map[string]float64{"value": 50})}, 50},
		{"vus", map[string]*k6.Metric{"vus": gauge(map[string]float64{"value": 0, "max": 45})}, 45},
		{"none", map[string]*k6.Metric{}, 0},
	}
	for _, tt := range tests {
		if got := VUsOf(&k6.Run{Metrics: tt.metrics}); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

// A run's halves: its requests and p95 in each half of its span, from
// the loader's time bins; too short a run has none.
func TestHalves(t *testing.T) {
	var samples []sample
	for i := range 120 {
		d := 100.0
		if i >= 60 {
			d = 150
		}
		at := time.Duration(i) * time.Second
		samples = append(samples, sample{metric: "http_reqs", value: 1, at: at}, sample{metric: "http_req_duration", value: d + float64(i%5), at: at})
	}
	h := readNDJSON(t, ndjson(samples), "").Halves
	if h == nil || h.Requests != [2]int64{60, 60} || math.Abs(h.P95[0]/104-1) > 0.01 || math.Abs(h.P95[1]/154-1) > 0.01 {
		t.Errorf("halves %+v, want 60 and 60 requests, p95 104 and 154", h)
	}
	if h := readNDJSON(t, ndjson(samples[:30]), "").Halves; h != nil {
		t.Errorf("a 15-second run has halves %+v", h)
	}
}

func TestRequestsNeeded(t *testing.T) {
	for _, tc := range []struct {
		n    Name
		want int64
	}{{Median, 20}, {P95, 200}, {P99, 1000}, {Avg, 0}, {Max, 0}, {RPS, 0}} {
		d := tc.n.Def()
		if got := d.RequestsNeeded(); got != tc.want {
			t.Errorf("%s needs %d requests, want %d", tc.n, got, tc.want)
		}
		if tc.want > 0 && (d.Supported(tc.want-1) || !d.Supported(tc.want)) {
			t.Errorf("%s: supported must start at %d requests", tc.n, tc.want)
		}
	}
}
