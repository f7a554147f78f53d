package figures

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Support is what the request counts of a set of runs say of one
// latency trend's percentiles (the run's http_req_duration or one
// endpoint's): how many runs have a known count, and the fewest and the
// most requests one of them had.
type Support struct {
	Runs     int
	Min, Max int64
}

// SupportOf is the support of an endpoint's trend ("" for the run's
// http_req_duration) in the runs that carry it with a known count.
func SupportOf(runs []Run, endpoint string) Support {
	var s Support
	for i := range runs {
		if l, ok := runs[i].Of(endpoint); ok {
			s = s.with(l.Count)
		}
	}
	return s
}

// Join is the support of both sets of runs together.
func (s Support) Join(o Support) Support {
	switch {
	case s.Runs == 0:
		return o
	case o.Runs == 0:
		return s
	}
	return Support{Runs: s.Runs + o.Runs, Min: min(s.Min, o.Min), Max: max(s.Max, o.Max)}
}

// with adds one run's count; an unknown count (0) adds nothing.
func (s Support) with(count int64) Support {
	if count <= 0 {
		return s
	}
	return s.Join(Support{Runs: 1, Min: count, Max: count})
}

// Estimates says whether every run of known count estimates figure n
// (Def.Supported). With no count known nothing says otherwise, and it
// is true.
func (s Support) Estimates(n Name) bool {
	return s.Runs == 0 || n.Def().Supported(s.Min)
}

// Estimated are the percentiles every run estimates, in ascending order.
func (s Support) Estimated() []Name {
	var out []Name
	for _, n := range Percentiles() {
		if s.Estimates(n) {
			out = append(out, n)
		}
	}
	return out
}

// Requests is "53–64", the counts' range, or "64" when they agree.
func (s Support) Requests() string {
	if s.Min == s.Max {
		return Thousands(s.Min)
	}
	return Thousands(s.Min) + "–" + Thousands(s.Max)
}

// Shortfall says why the runs do not estimate percentile n and what
// would: "p99 needs ≥ 1,000 requests a run; document_upload had 53–64:
// run about 19× longer", who naming whose requests were counted. It is
// "" when the runs estimate n.
func (s Support) Shortfall(n Name, who string) string {
	if s.Estimates(n) {
		return ""
	}
	need := n.Def().RequestsNeeded()
	return fmt.Sprintf("%s needs ≥ %s requests a run; %s had %s: run about %s× longer",
		n.Def().Label, Thousands(need), who, s.Requests(), longer(float64(need)/float64(s.Min)))
}

// Instead is the percentile to judge in place of n, which the runs do
// not estimate: the highest they do ("p95", "the median"); "" when they
// estimate n or none.
func (s Support) Instead(n Name) string {
	est := s.Estimated()
	if s.Estimates(n) || len(est) == 0 {
		return ""
	}
	lower := est[len(est)-1]
	return article(lower) + lower.Def().Label
}

// longer is a factor of run length, rounded up: one decimal below 10
// ("1.4"), whole above ("19").
func longer(f float64) string {
	if f < 10 {
		return strconv.FormatFloat(math.Ceil(f*10)/10, 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Ceil(f), 'f', 0, 64)
}

// article is "the " before a figure named by a word (the median), none
// before one named by a symbol (p95).
func article(n Name) string {
	if n == Median {
		return "the "
	}
	return ""
}

// Thousands writes 101882 as 101,882.
func Thousands(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
