package envelope

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/envelope-dev/envelope/internal/figures"
)

// ParseMatch parses an envelope's match: PromQL label matchers without
// braces, as a vector selector holds them ({<match>}). Empty is no
// matcher. A match naming the metric (__name__) is refused: the rules
// put it on many metrics. So is one that every series satisfies only by
// lacking the label (such as job=""): it would select nothing useful.
func ParseMatch(match string) ([]*labels.Matcher, error) {
	m := strings.TrimSpace(match)
	if m == "" {
		return nil, nil
	}
	if strings.HasPrefix(m, "{") {
		return nil, fmt.Errorf("%q: write the matchers without braces, e.g. envelope=\"checkout\"", match)
	}
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector("{" + m + "}")
	if err != nil {
		return nil, fmt.Errorf("%q is not a list of PromQL label matchers: %v", match, err)
	}
	for _, x := range ms {
		if x.Name == model.MetricNameLabel {
			return nil, fmt.Errorf("%q names the metric (%s); match only on k6 tags such as testid, scenario or envelope", match, x)
		}
	}
	allEmpty := true
	for _, x := range ms {
		if !x.Matches("") {
			allEmpty = false
		}
	}
	if allEmpty {
		return nil, fmt.Errorf("%q matches series that lack its labels, so it would select every test; give at least one matcher that needs a value, e.g. envelope=\"checkout\"", match)
	}
	return ms, nil
}

// Selector is the envelope's match in canonical form (each matcher as
// Prometheus prints it, comma-separated), ready to go between braces; ""
// when the envelope judges every test. The match must be valid
// (ParseMatch); Validate checks it when the file is read.
func (env *Envelope) Selector() string {
	ms, err := ParseMatch(env.Match)
	if err != nil || len(ms) == 0 {
		return ""
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return strings.Join(parts, ", ")
}

// checkMatchRuns warns when the match selects none, or only some, of the
// baseline's own runs (MatchRunsWarning).
func checkMatchRuns(match string, runs []figures.Run, w *warnings) {
	if s := MatchRunsWarning(match, runs); s != "" {
		w.add("--match %s", s)
	}
}

// MatchRunsWarning says, in a sentence that begins with the match, that
// it selects none, or only some, of runs: the rules and the served
// gauges scoped to it judge only tests whose k6 tags satisfy it, so a
// match no run carries (such as envelope="x" over runs made without
// --tag envelope=x) scopes alerts that stay silent for runs like these.
// It names the test-wide tags the runs do carry, the ones a match
// usually selects on. It is "" when the match selects every run, when
// it is empty, and when no run carries tags (runs read from summary
// files are not checked).
func MatchRunsWarning(match string, runs []figures.Run) string {
	ms, err := ParseMatch(match)
	if err != nil || len(ms) == 0 {
		return ""
	}
	checked, selected := 0, 0
	var missed []string
	tags := map[string][]string{}
	for _, r := range runs {
		if r.Tags == nil {
			continue
		}
		checked++
		for k, vs := range r.Tags {
			if len(vs) != 1 {
				continue // a tag of the requests, not of the test
			}
			if !slices.Contains(tags[k], vs[0]) && len(tags[k]) < 4 {
				tags[k] = append(tags[k], vs[0])
			}
		}
		if tagsMatch(ms, r.Tags) {
			selected++
		} else {
			missed = append(missed, r.Source)
		}
	}
	if checked == 0 || selected == checked {
		return ""
	}
	carry := "no test-wide tag"
	if len(tags) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			parts = append(parts, fmt.Sprintf("%s (%s)", k, strings.Join(tags[k], ", ")))
		}
		carry = "test-wide tags " + strings.Join(parts, ", ")
	}
	if selected == 0 {
		these := fmt.Sprintf("none of the %d runs, which carry", checked)
		if checked == 1 {
			these = "none of the run's series, which carry"
		}
		return fmt.Sprintf("%s selects %s %s: the rules and the served envelope gauges judge only tests whose k6 tags match it, so runs like these never trip its alerts; tag the runs to match (k6 run --tag NAME=VALUE, and serve --k6.allow-tag NAME) or match a tag they carry", match, these, carry)
	}
	return fmt.Sprintf("%s selects %d of the %d runs (not %s), which carry %s", match, selected, checked, strings.Join(missed, ", "), carry)
}

// tagsMatch reports whether every matcher is satisfied by a value its
// tag takes on the run's samples, a tag the samples lack reading as ""
// as in PromQL.
func tagsMatch(ms []*labels.Matcher, tags map[string][]string) bool {
	for _, m := range ms {
		vs := tags[m.Name]
		if len(vs) == 0 {
			vs = []string{""}
		}
		if !slices.ContainsFunc(vs, m.Matches) {
			return false
		}
	}
	return true
}
