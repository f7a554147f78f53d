package rules

import (
	"fmt"
	"strings"

	"github.com/envelope-dev/envelope/internal/envelope"
)

// EnvelopeLabel is the label every generated recording rule and alert
// carries: the name of the envelope whose rules produced it. Rules of
// several envelopes load side by side in one Prometheus and write the
// same recording names, told apart by this label.
const EnvelopeLabel = "envelope"

// DefaultTopologyLabels are the labels every aggregation keeps besides
// testid, so runs with the same testid from two clusters, namespaces or
// jobs never merge behind a global query layer (Thanos, Mimir). A label
// a series does not have costs nothing.
func DefaultTopologyLabels() []string { return []string{"job", "namespace", "cluster"} }

// scope is how every generated expression selects and groups: the
// envelope's match on every k6 selector, testid plus the topology labels
// in every by and on clause, and the envelope label on every recorded
// series the rules read back. Expressions build their selectors and
// clauses only here, so the thresholds and windows around them can
// change without touching the scoping.
type scope struct {
	name  string   // envelope name, the value of EnvelopeLabel
	match string   // canonical matchers without braces, "" for every test
	vus   string   // the matchers k6's VU gauge can carry (see vuTags)
	keep  []string // testid first, then the topology labels
	// perRequest is true when the match names a tag k6 sets per request
	// or scenario, which the VU gauge lacks.
	perRequest bool
}

// perRequestTags are the tags k6 puts on request and iteration samples
// but not on the vus gauge, which carries only the test-wide tags
// (--tag, options.tags: testid, envelope, ...).
var perRequestTags = map[string]bool{
	"scenario": true, "name": true, "method": true, "status": true, "expected_response": true,
	"group": true, "url": true, "check": true, "error_code": true, "proto": true, "tls_version": true,
}

func newScope(env *envelope.Envelope, o Options) (scope, error) {
	if _, err := envelope.ParseMatch(env.Match); err != nil {
		return scope{}, fmt.Errorf("envelope %q: match: %w", env.Name, err)
	}
	if env.Name == "" {
		return scope{}, fmt.Errorf("envelope: name: missing field (it labels every rule)")
	}
	keep := []string{"testid"}
	topo := o.TopologyLabels
	if topo == nil {
		topo = DefaultTopologyLabels()
	}
	for _, l := range topo {
		if l != "" && l != "testid" && l != EnvelopeLabel {
			keep = append(keep, l)
		}
	}
	sc := scope{name: env.Name, match: env.Selector(), keep: keep}
	ms, _ := envelope.ParseMatch(env.Match)
	var vu []string
	for _, m := range ms {
		if perRequestTags[m.Name] {
			sc.perRequest = true
			continue
		}
		vu = append(vu, m.String())
	}
	sc.vus = strings.Join(vu, ", ")
	return sc, nil
}

// sel is the selector of a k6 series: the envelope's match plus extra
// matchers, in braces ("" when there is none).
func (s scope) sel(extra ...string) string {
	var parts []string
	if s.match != "" {
		parts = append(parts, s.match)
	}
	for _, e := range extra {
		if e != "" {
			parts = append(parts, e)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// vuSel is the selector of the k6_vus gauge: the match without the
// per-request tags the gauge never has. Conditions on VUs are joined with
// a matched series (and on), which restricts them to matched tests.
func (s scope) vuSel() string {
	if s.vus == "" {
		return ""
	}
	return "{" + s.vus + "}"
}

// by lists the labels an aggregation keeps: testid, the topology labels,
// then extra (e.g. name, le).
func (s scope) by(extra ...string) string {
	return strings.Join(append(append([]string{}, s.keep...), extra...), ", ")
}

// sum is `sum by (<keep>[, extra]) (inner)`.
func (s scope) sum(inner string, extra ...string) string {
	return fmt.Sprintf("sum by (%s) (%s)", s.by(extra...), inner)
}

// on is the matching clause joining two per-test vectors.
func (s scope) on() string { return "on (" + s.by() + ")" }

// rec selects a recording rule's series of this envelope only.
func (s scope) rec(name string) string {
	return fmt.Sprintf("%s{%s=%s}", name, EnvelopeLabel, promString(s.name))
}

// group names a rule group of this envelope: the envelope's name keeps
// the groups of two envelopes apart in one Prometheus.
func (s scope) group(kind string) string { return "envelope-" + s.name + "-" + kind }

// labels returns l with the envelope label added.
func (s scope) labels(l map[string]string) map[string]string {
	out := map[string]string{EnvelopeLabel: templateText(s.name, "")}
	for k, v := range l {
		out[k] = v
	}
	return out
}
