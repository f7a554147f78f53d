package rules

import (
	"fmt"
	"regexp/syntax"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/envelope-dev/envelope/internal/envelope"
)

// testLabels are the labels the promtool inputs carry so the envelope's
// match selects them, and a label set it refuses (for the input that must
// stay silent because it belongs to another test).
type testLabels struct {
	ms      []*labels.Matcher
	in      map[string]string // labels of every matched input series
	out     map[string]string // labels of an unmatched test
	testids map[string]string // design testid → testid the match accepts
}

func newTestLabels(env *envelope.Envelope) (*testLabels, error) {
	ms, err := envelope.ParseMatch(env.Match)
	if err != nil {
		return nil, err
	}
	t := &testLabels{ms: ms, in: map[string]string{}, testids: map[string]string{}}
	for _, m := range ms {
		if m.Name == "testid" || m.Matches("") {
			continue // testids are chosen per input; absent satisfies the rest
		}
		v, ok := satisfy(m, "")
		if !ok {
			return nil, fmt.Errorf("match %q: no value of %s satisfies %s for the rule tests", env.Match, m.Name, m)
		}
		t.in[m.Name] = v
	}
	for _, m := range ms {
		if m.Name != "testid" && !t.matches(t.in, m) {
			return nil, fmt.Errorf("match %q: the rule tests found no label set satisfying every matcher", env.Match)
		}
	}
	if len(ms) > 0 {
		t.out = map[string]string{}
		for k, v := range t.in {
			t.out[k] = v
		}
		// Break the first matcher that needs a label other than testid.
		for _, m := range ms {
			if m.Name == "testid" {
				continue
			}
			for _, cand := range []string{"", m.Value + "-other", m.Value, "other"} {
				if !m.Matches(cand) {
					if cand == "" {
						delete(t.out, m.Name)
					} else {
						t.out[m.Name] = cand
					}
					return t, nil
				}
			}
		}
		t.out = nil // only testid is matched: the unmatched input gets another testid
	}
	return t, nil
}

func (t *testLabels) matches(l map[string]string, m *labels.Matcher) bool {
	return m.Matches(l[m.Name])
}

// testid maps a design testid ("baseline", "regressed") to one the match
// accepts: the design name itself, or an example of the testid matcher
// followed by it.
func (t *testLabels) testid(id string) string {
	if v, ok := t.testids[id]; ok {
		return v
	}
	v := id
	for _, m := range t.ms {
		if m.Name != "testid" || m.Matches(v) {
			continue
		}
		if ex, ok := satisfy(m, id); ok {
			v = ex
		}
	}
	t.testids[id] = v
	return v
}

// satisfy finds a value m accepts: suffix itself, m's value for an
// equality, or the shortest string its regular expression produces with
// suffix tried in the place of its first repetition.
func satisfy(m *labels.Matcher, suffix string) (string, bool) {
	cands := []string{suffix}
	switch m.Type {
	case labels.MatchEqual:
		cands = append(cands, m.Value)
	case labels.MatchRegexp:
		if re, err := syntax.Parse(m.Value, syntax.Perl); err == nil {
			cands = append(cands, example(re.Simplify(), suffix), example(re.Simplify(), ""))
		}
	case labels.MatchNotEqual, labels.MatchNotRegexp:
		cands = append(cands, "other", "other-"+suffix)
	}
	for _, c := range cands {
		if c != "" && m.Matches(c) {
			return c, true
		}
	}
	return "", false
}

// example writes a string re matches (for the simple expressions label
// matchers use: literals, classes, alternations, repetitions).
func example(re *syntax.Regexp, fill string) string {
	var b strings.Builder
	var walk func(r *syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			b.WriteString(string(r.Rune))
		case syntax.OpCharClass:
			if len(r.Rune) > 0 {
				b.WriteRune(r.Rune[0])
			}
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			if fill != "" {
				b.WriteString(fill)
				fill = ""
			} else {
				b.WriteByte('x')
			}
		case syntax.OpStar, syntax.OpQuest:
			if fill != "" && len(r.Sub) > 0 && (r.Sub[0].Op == syntax.OpAnyChar || r.Sub[0].Op == syntax.OpAnyCharNotNL) {
				b.WriteString(fill)
				fill = ""
			}
		case syntax.OpPlus, syntax.OpRepeat:
			n := 1
			if r.Op == syntax.OpRepeat {
				n = max(r.Min, 1)
			}
			for range n {
				walk(r.Sub[0])
			}
		case syntax.OpConcat, syntax.OpCapture:
			for _, s := range r.Sub {
				walk(s)
			}
		case syntax.OpAlternate:
			walk(r.Sub[0])
		}
	}
	walk(re)
	return b.String()
}
