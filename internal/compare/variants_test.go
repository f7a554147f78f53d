package compare

import (
	"math"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// The alternatives the method was chosen over, run side by side with it
// by the power measurement (power_test.go) and on the real runs
// (real_test.go); docs/compare.md gives their error rates. A variant
// picks one choice of each part of the judgement; its zero value is the
// method Compare runs. Its judgeConfig substitutes the parts it changes.

// powerVariant is one decision rule and family choice measured side by side.
type powerVariant struct {
	name    string
	variant variant
}

// powerVariants: the default first, the default with endpoint medians
// judged on their own second, then the alternatives they were chosen
// over, the last an interval rule (interval beyond the tolerance, Holm
// across every figure, Satterthwaite's degrees of freedom) in place of
// the Kayenta-like one. The variants from the seventh on judge endpoint
// medians on their own, as the second does, and change other parts of
// the judgement.
func powerVariants() []powerVariant {
	alone := func(v variant) variant { v.reference = refAlone; return v }
	return []powerVariant{
		{"default: estimate beyond tolerance and significant; Holm within the headline, weighted Holm within each endpoint (median 1/2, p95 and p99 1/4); an endpoint's median against the run's other endpoints, and its own estimate beyond half the tolerance; runs' df", variant{}},
		{"the default before: an endpoint's median judged on its own", alone(variant{})},
		{"the same, endpoint median against the run's other endpoints", variant{reference: refOthers}},
		{"the same, endpoint median against the other endpoints and its own estimate above 0", variant{reference: refOthersSlower}},
		{"the same, endpoint median, p95 and p99 against the run's other endpoints", variant{reference: refOthers, relativeTails: true}},
		{"the same, endpoint median, p95 and p99 against the other endpoints and their own estimates above 0", variant{reference: refOthersSlower, relativeTails: true}},
		{"medians on their own, Holm within each endpoint (the default before weighted Holm)", alone(variant{procedure: procHolm})},
		{"medians on their own, weighted Holm, median 0.7, p95 and p99 0.15", alone(variant{medianWeight: 0.7})},
		{"medians on their own, a fixed sequence within each endpoint (median, p95, p99)", alone(variant{procedure: procSequence})},
		{"medians on their own, Satterthwaite's df", alone(variant{satterthwaite: true})},
		{"medians on their own, Holm over the headline and over all endpoint figures together", alone(variant{families: familiesEndpoints, procedure: procHolm})},
		{"medians on their own, significant and estimate beyond half the tolerance", alone(variant{rule: ruleHalf})},
		{"before: interval beyond tolerance; Holm over every figure; Satterthwaite's df", alone(variant{rule: ruleInterval, families: familiesAll, satterthwaite: true, procedure: procHolm})},
	}
}

// variant is one way of judging.
type variant struct {
	rule     decisionRule
	families familyMode
	// procedure is how an endpoint family's p-values are adjusted;
	// medianWeight the median's weight under procWeighted (the tails
	// share the rest; 0 is the method's medianWeight).
	procedure    endpointProcedure
	medianWeight float64
	// satterthwaite keeps the run-level interval's Satterthwaite degrees
	// of freedom, which count the candidates' known sampling variance as
	// exact, instead of the runs' own n_base + n_cand − 2.
	satterthwaite bool
	// reference is what an endpoint's median is judged against;
	// relativeTails judges its p95 and p99 against the same reference.
	reference     referenceMode
	relativeTails bool
	// opts are the comparison's options (a broken policy for the
	// guards' own check; zero: the defaults).
	opts Options
}

// decisionRule is how a figure's interval and p-value make a Regression.
type decisionRule int

const (
	// ruleEstimate: the change is significant in the bad direction
	// (one-sided p of a change beyond 0, Holm within the family) and its
	// estimate exceeds the tolerance.
	ruleEstimate decisionRule = iota
	// ruleHalf: significant in the bad direction and the estimate beyond
	// half the tolerance.
	ruleHalf
	// ruleInterval: the whole interval lies beyond the tolerance and the
	// one-sided p of a change beyond the tolerance survives Holm across
	// the family.
	ruleInterval
)

// familyMode is which figures share one Holm correction.
type familyMode int

const (
	// familiesSplit: the headline figures form one family, each
	// endpoint's figures another.
	familiesSplit familyMode = iota
	// familiesEndpoints: the headline figures one family, all endpoint
	// figures together another.
	familiesEndpoints
	// familiesAll: every figure in one family.
	familiesAll
)

// endpointProcedure is the multiplicity procedure within one endpoint's
// family of median, p95 and p99.
type endpointProcedure int

const (
	// procWeighted: weighted Holm, the median a larger share of the
	// level than each tail (variant.medianWeight, by default the
	// method's medianWeight).
	procWeighted endpointProcedure = iota
	// procHolm: Holm's step-down method, equal weights.
	procHolm
	// procSequence: median, then p95, then p99, each at the full level
	// while every earlier one is rejected.
	procSequence
)

// referenceMode is what an endpoint's median is judged against.
type referenceMode int

const (
	// refOthersHalf: against the other endpoints, and a Regression only
	// when the endpoint's own estimate rose beyond half the tolerance.
	refOthersHalf referenceMode = iota
	// refAlone: the endpoint's own values, as the headline figures are.
	refAlone
	// refOthers: against the run's other endpoints.
	refOthers
	// refOthersSlower: against the other endpoints, and a Regression
	// only when the endpoint's own estimate rose too.
	refOthersSlower
)

// judgeConfig is the variant as the parts of the judgement it replaces;
// the parts it leaves unset are the method's.
func (v variant) judgeConfig() judgeConfig {
	var jc judgeConfig
	switch v.rule {
	case ruleEstimate:
	case ruleHalf:
		jc.evidence = func(r stats.RatioCI, better string, tol float64) (float64, bool) {
			return badChange(r, better, tol/2)
		}
	case ruleInterval:
		// A Regression comes from the interval's own verdict alone.
		jc.evidence = func(r stats.RatioCI, better string, tol float64) (float64, bool) {
			if better == "lower" {
				return r.PAbove(tol), false
			}
			return r.PBelow(tol), false
		}
	}

	switch v.families {
	case familiesSplit:
	case familiesEndpoints:
		jc.family = func(f *Figure) string {
			if f.Endpoint != "" {
				return familyEndpoint
			}
			return f.Family
		}
	case familiesAll:
		jc.family = func(*Figure) string { return "all" }
	}

	// Families other than one endpoint's take Holm's method under every
	// procedure.
	within := func(adjust func(names []figures.Name, ps []float64) []float64) func(string, []figures.Name, []float64) []float64 {
		return func(family string, names []figures.Name, ps []float64) []float64 {
			if !isEndpointFamily(family) {
				return stats.Holm(ps)
			}
			return adjust(names, ps)
		}
	}
	switch v.procedure {
	case procWeighted:
		if v.medianWeight != 0 {
			jc.adjust = within(func(names []figures.Name, ps []float64) []float64 {
				return stats.WeightedHolm(ps, endpointWeights(names, v.medianWeight))
			})
		}
	case procHolm:
		jc.adjust = within(func(_ []figures.Name, ps []float64) []float64 { return stats.Holm(ps) })
	case procSequence:
		jc.adjust = within(func(_ []figures.Name, ps []float64) []float64 { return stats.FixedSequence(ps) })
	}

	if v.satterthwaite {
		jc.interval = stats.RunLevelLog
	}

	switch v.reference {
	case refAlone:
		jc.against = func(figures.Name) bool { return false }
	case refOthersHalf, refOthers, refOthersSlower:
		if v.relativeTails {
			jc.against = func(figures.Name) bool { return true }
		}
	}
	switch v.reference {
	case refOthersHalf, refAlone:
	case refOthers:
		// Any own estimate, however far it fell.
		jc.ownRise = func(float64) float64 { return math.Inf(-1) }
	case refOthersSlower:
		jc.ownRise = func(float64) float64 { return 0 }
	}
	return jc
}

// compare judges runs against env with the variant (Compare's options
// at their defaults).
func (v variant) compare(env *envelope.Envelope, runs []figures.Run) (*Result, error) {
	return compare(env, runs, v.opts, v.judgeConfig())
}
