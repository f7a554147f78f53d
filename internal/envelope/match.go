package envelope

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
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
// baseline's own runs: the rules and the served gauges scoped to it
// judge only tests whose k6 tags satisfy it, so a match no run carries
// (such as envelope="x" over runs made without --tag envelope=x) scopes
// alerts that stay silent for runs like these. It names the test-wide
// tags the runs do carry, the ones a match usually selects on. Runs read
// from summary files carry no tags and are not checked.
func checkMatchRuns(match string, in []Input, w *warnings) {
	ms, err := ParseMatch(match)
	if err != nil || len(ms) == 0 {
		return
	}
	checked, selected := 0, 0
	var missed []string
	tags := map[string][]string{}
	for _, r := range in {
		if len(r.Run.Points) == 0 {
			continue
		}
		checked++
		hit := false
		for _, p := range r.Run.Points {
			if p.Metric == "vus" {
				for k, v := range p.Tags {
					if !slices.Contains(tags[k], v) && len(tags[k]) < 4 {
						tags[k] = append(tags[k], v)
					}
				}
			}
			if !hit && pointMatches(ms, p.Tags) {
				hit = true
			}
		}
		if hit {
			selected++
		} else {
			missed = append(missed, r.Source.File)
		}
	}
	if checked == 0 || selected == checked {
		return
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
		w.add("--match %s selects none of the %d runs, which carry %s: the rules and the served envelope gauges judge only tests whose k6 tags match it, so runs like these never trip its alerts; tag the runs to match (k6 run --tag NAME=VALUE, and serve --k6.allow-tag NAME) or match a tag they carry", match, checked, carry)
		return
	}
	w.add("--match %s selects %d of the %d runs (not %s), which carry %s", match, selected, checked, strings.Join(missed, ", "), carry)
}

// pointMatches reports whether a sample with these tags satisfies every
// matcher, a missing tag reading as "" as in PromQL.
func pointMatches(ms []*labels.Matcher, tags map[string]string) bool {
	for _, m := range ms {
		if !m.Matches(tags[m.Name]) {
			return false
		}
	}
	return true
}
