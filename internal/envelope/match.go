package envelope

import (
	"fmt"
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
