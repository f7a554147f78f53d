package envelope

import (
	"fmt"
	"math"

	"github.com/envelope-dev/envelope/internal/figures"
)

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

// validateRunValues checks the per-run endpoint values: each names an
// endpoint of the envelope, its figures are finite and non-negative, and
// its intervals are ordered.
func (env *Envelope) validateRunValues() []FieldError {
	var errs []FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, FieldError{field, fmt.Sprintf(format, a...)})
	}
	ci := func(field string, c *figures.Interval) {
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
		ci(base+".median_ci", r.MedianCI)
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
			ci(field+".median_ci", e.MedianCI)
			ci(field+".p95_ci", e.P95CI)
			ci(field+".p99_ci", e.P99CI)
		}
	}
	return errs
}
