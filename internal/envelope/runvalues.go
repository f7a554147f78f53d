package envelope

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
	"github.com/envelope-dev/envelope/internal/stats"
)

// runStats are the trend statistics the envelope reads from each run:
// k6's default summaryTrendStats and p(99), which they lack.
func runStats() []string { return append(k6.DefaultStats(), "p(99)") }

// LoadOptions are how baseline reads run files: point streams are
// summarized with RunStats and keep their points, from which each run's
// order-statistic intervals come; summaries keep their own statistics.
func LoadOptions(skipWarmup time.Duration, groupBy string) k6.LoadOptions {
	return k6.LoadOptions{SkipWarmup: skipWarmup, GroupBy: groupBy, KeepPoints: true, Stats: runStats()}
}

// ErrorRate is the run's share of failed requests (http_req_failed),
// rounded as the envelope's error rate is; 0 without requests.
func (f RunFigures) ErrorRate() float64 {
	if f.Requests <= 0 {
		return 0
	}
	return round6(float64(f.Failed) / float64(f.Requests))
}

// Interval is a confidence interval of one run's figure (ms).
type Interval struct {
	Low  float64 `json:"low" yaml:"low"`
	High float64 `json:"high" yaml:"high"`
}

// RunEndpoint is one run's value of each statistic of one endpoint (ms).
// A statistic the run's file lacks (p99 outside summaryTrendStats) is
// absent (0).
type RunEndpoint struct {
	// Count is the endpoint's sample count in the run, when known.
	Count  int64   `json:"count,omitempty" yaml:"count,omitempty"`
	Avg    float64 `json:"avg,omitempty" yaml:"avg,omitempty"`
	Median float64 `json:"median,omitempty" yaml:"median,omitempty"`
	P95    float64 `json:"p95,omitempty" yaml:"p95,omitempty"`
	P99    float64 `json:"p99,omitempty" yaml:"p99,omitempty"`
	Max    float64 `json:"max,omitempty" yaml:"max,omitempty"`
	// Order-statistic intervals of p95 and p99, from point files.
	P95CI *Interval `json:"p95_ci,omitempty" yaml:"p95_ci,omitempty"`
	P99CI *Interval `json:"p99_ci,omitempty" yaml:"p99_ci,omitempty"`
}

// HasRunEndpointValues says whether the envelope keeps per-run endpoint
// values. Files written before they were kept hold only the bands.
func (env *Envelope) HasRunEndpointValues() bool {
	for _, r := range env.Runs {
		if len(r.Endpoints) > 0 {
			return true
		}
	}
	return false
}

// FormatWarnings names what an envelope written in an older form lacks
// and what that costs; empty for a current file.
func (env *Envelope) FormatWarnings() []string {
	if len(env.Endpoints) > 0 && len(env.Runs) > 1 && !env.HasRunEndpointValues() {
		return []string{fmt.Sprintf("envelope %s keeps only the endpoint bands, not each run's endpoint values (a file written before they were kept): endpoint comparisons estimate the run-to-run spread from each band's min and max, which is much less certain; derive the envelope again with envelope baseline to keep them", env.Name)}
	}
	return nil
}

// Samples gathers a run's http_req_duration samples (aggregate) and each
// endpoint's, sorted, from the run's points; nil without points. An
// endpoint of a custom trend takes that trend's points, a tagged
// endpoint the http_req_duration points carrying its tag value.
func Samples(r *k6.Run, eps map[string]Endpoint) (aggregate []float64, perEndpoint map[string][]float64) {
	if len(r.Points) == 0 {
		return nil, nil
	}
	perEndpoint = map[string][]float64{}
	byMetric := map[string][]string{}
	type tagSel struct{ tag, value, name string }
	var byTag []tagSel
	for _, name := range sortedKeys(eps) {
		e := eps[name]
		switch {
		case e.Metric != "":
			byMetric[e.Metric] = append(byMetric[e.Metric], name)
		case e.Tag != "":
			byTag = append(byTag, tagSel{e.Tag, e.Value, name})
		}
	}
	for _, p := range r.Points {
		if p.Metric == k6.HTTPReqDuration {
			aggregate = append(aggregate, p.Value)
			for _, s := range byTag {
				if p.Tags[s.tag] == s.value {
					perEndpoint[s.name] = append(perEndpoint[s.name], p.Value)
				}
			}
		}
		for _, name := range byMetric[p.Metric] {
			perEndpoint[name] = append(perEndpoint[name], p.Value)
		}
	}
	slices.Sort(aggregate)
	for _, xs := range perEndpoint {
		slices.Sort(xs)
	}
	return aggregate, perEndpoint
}

// QuantileInterval is the order-statistic interval of the p quantile of
// sorted samples, nil when there are too few samples for one.
func QuantileInterval(sorted []float64, p, confidence float64) *Interval {
	lo, hi, ok := stats.QuantileCI(sorted, p, confidence)
	if !ok {
		return nil
	}
	return &Interval{Low: round6(lo), High: round6(hi)}
}

// fillRunValues records each run's endpoint values and, from point
// files, the order-statistic intervals of its p95 and p99.
func fillRunValues(env *Envelope, in []Input, keys []endpointKey, conf float64) {
	for i, r := range in {
		run := &env.Runs[i]
		for _, key := range keys {
			m := key.get(r.Run)
			if m == nil {
				continue
			}
			v := func(stat string) float64 {
				x, ok := m.Values[stat]
				if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
					return 0
				}
				return round6(x)
			}
			re := RunEndpoint{Avg: v("avg"), Median: v("med"), P95: v("p(95)"), P99: v("p(99)"), Max: v("max")}
			if c, ok := m.Values["count"]; ok && c >= 0 {
				re.Count = int64(math.Round(c))
			}
			if run.Endpoints == nil {
				run.Endpoints = map[string]RunEndpoint{}
			}
			run.Endpoints[key.name] = re
		}
		agg, per := Samples(r.Run, env.Endpoints)
		if agg != nil {
			run.P95CI = QuantileInterval(agg, 0.95, conf)
			run.P99CI = QuantileInterval(agg, 0.99, conf)
		}
		for name, xs := range per {
			re, ok := run.Endpoints[name]
			if !ok {
				continue
			}
			re.P95CI = QuantileInterval(xs, 0.95, conf)
			re.P99CI = QuantileInterval(xs, 0.99, conf)
			if re.Count == 0 {
				re.Count = int64(len(xs))
			}
			run.Endpoints[name] = re
		}
	}
}

// validateRunValues checks the per-run endpoint values: each names an
// endpoint of the envelope, its figures are finite and non-negative, and
// its intervals are ordered.
func (env *Envelope) validateRunValues() []FieldError {
	var errs []FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, FieldError{field, fmt.Sprintf(format, a...)})
	}
	ci := func(field string, c *Interval) {
		if c == nil {
			return
		}
		if math.IsNaN(c.Low) || math.IsNaN(c.High) || math.IsInf(c.Low, 0) || math.IsInf(c.High, 0) || c.Low < 0 {
			add(field, "[%v, %v] is not a finite interval of values ≥ 0", c.Low, c.High)
		} else if c.Low > c.High {
			add(field+".low", "%v is above %s.high %v", c.Low, field, c.High)
		}
	}
	for i, r := range env.Runs {
		base := fmt.Sprintf("runs[%d]", i)
		ci(base+".p95_ci", r.P95CI)
		ci(base+".p99_ci", r.P99CI)
		for _, name := range sortedKeys(r.Endpoints) {
			e := r.Endpoints[name]
			field := base + ".endpoints." + name
			if _, ok := env.Endpoints[name]; !ok {
				add(field, "names no endpoint of the envelope")
			}
			if e.Count < 0 {
				add(field+".count", "is %d, want a count ≥ 0", e.Count)
			}
			for _, s := range []struct {
				k string
				v float64
			}{{"avg", e.Avg}, {"median", e.Median}, {"p95", e.P95}, {"p99", e.P99}, {"max", e.Max}} {
				if math.IsNaN(s.v) || math.IsInf(s.v, 0) || s.v < 0 {
					add(field+"."+s.k, "is %v, want a finite number ≥ 0", s.v)
				}
			}
			ci(field+".p95_ci", e.P95CI)
			ci(field+".p99_ci", e.P99CI)
		}
	}
	return errs
}
