package figures

import "testing"

func TestSupport(t *testing.T) {
	runs := func(counts ...int64) []Run {
		out := make([]Run, len(counts))
		for i, c := range counts {
			out[i] = Run{Endpoints: map[string]Latency{"upload": {Count: c, Median: 1}}}
		}
		return out
	}
	cases := []struct {
		name      string
		runs      []Run
		estimated []Name
		p99, p95  string
		instead   string // of p99
	}{
		{"unknown counts", runs(0, 0), []Name{Median, P95, P99}, "", "", ""},
		{"every tail", runs(2000, 1000), []Name{Median, P95, P99}, "", "", ""},
		{"one short run", runs(2000, 999), []Name{Median, P95}, "p99 needs ≥ 1,000 requests a run; upload had 999–2,000: run about 1.1× longer", "", "p95"},
		{"few requests", runs(64, 53, 0), []Name{Median},
			"p99 needs ≥ 1,000 requests a run; upload had 53–64: run about 19× longer",
			"p95 needs ≥ 200 requests a run; upload had 53–64: run about 3.8× longer", "the median"},
		{"too few for a median", runs(12), nil, "p99 needs ≥ 1,000 requests a run; upload had 12: run about 84× longer", "p95 needs ≥ 200 requests a run; upload had 12: run about 17× longer", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := SupportOf(tc.runs, "upload")
			if got := s.Estimated(); len(got) != len(tc.estimated) || (len(got) > 0 && got[len(got)-1] != tc.estimated[len(tc.estimated)-1]) {
				t.Errorf("estimated %v, want %v", got, tc.estimated)
			}
			if got := s.Shortfall(P99, "upload"); got != tc.p99 {
				t.Errorf("p99 shortfall %q, want %q", got, tc.p99)
			}
			if got := s.Shortfall(P95, "upload"); got != tc.p95 {
				t.Errorf("p95 shortfall %q, want %q", got, tc.p95)
			}
			if got := s.Instead(P99); got != tc.instead {
				t.Errorf("instead of p99 %q, want %q", got, tc.instead)
			}
		})
	}
	a, b := SupportOf(runs(300), "upload"), SupportOf(runs(150, 0), "upload")
	if j := a.Join(b); j.Runs != 2 || j.Min != 150 || j.Max != 300 || j.Estimates(P95) {
		t.Errorf("join %+v", j)
	}
	if s := SupportOf(runs(300), "other"); s.Runs != 0 || !s.Estimates(P99) {
		t.Errorf("an endpoint no run has: %+v", s)
	}
	if s := SupportOf([]Run{{Requests: 2533}}, ""); s.Min != 2533 || !s.Estimates(P99) {
		t.Errorf("aggregate: %+v", s)
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 101882: "101,882", -1234567: "-1,234,567"} {
		if got := Thousands(in); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", in, got, want)
		}
	}
}
