package figures

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/k6"
)

// Workload is the load a run applied, as its file tells it.
type Workload struct {
	// VUs is the run's peak VU count (VUsOf); 0 when unknown.
	VUs int
	// Scenarios are the scenario names the run's samples carry, sorted.
	Scenarios []string
	// Metrics are the run's metrics (not sub-metrics), sorted.
	Metrics []string
	// Summary says the figures came from a summary file: whole-run
	// figures, from which no warm-up could be cut.
	Summary bool
	// Skipped is the warm-up cut from the start of the run's points.
	Skipped time.Duration
}

// VUsOf is a run's peak VU count: the max of vus_max, else of vus (a
// gauge's value when its max is not given); 0 when the file tells none.
func VUsOf(r *k6.Run) int {
	for _, name := range []string{"vus_max", "vus"} {
		if m := r.Metrics[name]; m != nil {
			for _, k := range []string{"max", "value"} {
				if v, ok := m.Values[k]; ok && v > 0 {
					return int(math.Round(v))
				}
			}
		}
	}
	return 0
}

// SameDuration is how far apart two runs' whole durations may lie and
// still be the same workload: within 10% of the longer.
const SameDuration = 0.10

// DurationsDiffer says whether whole durations a and b (both known) are
// different workloads.
func DurationsDiffer(a, b time.Duration) bool {
	if a <= 0 || b <= 0 {
		return false
	}
	return math.Abs(a.Seconds()-b.Seconds()) > SameDuration*math.Max(a.Seconds(), b.Seconds())
}

// WorkloadDiffs names every way run b's workload differs from run a's:
// VUs, scenarios, metric set and whole duration, each where both runs
// tell it. The names say which run is which.
func WorkloadDiffs(a, b *Run) []string {
	an, bn := a.Source, b.Source
	wa, wb := a.Workload, b.Workload
	var diffs []string
	if wa.VUs != 0 && wb.VUs != 0 && wa.VUs != wb.VUs {
		diffs = append(diffs, fmt.Sprintf("VUs: %s has %d, %s has %d", an, wa.VUs, bn, wb.VUs))
	}
	if len(wa.Scenarios) > 0 && len(wb.Scenarios) > 0 && !slices.Equal(wa.Scenarios, wb.Scenarios) {
		diffs = append(diffs, fmt.Sprintf("scenarios: %s has [%s], %s has [%s]", an, strings.Join(wa.Scenarios, ", "), bn, strings.Join(wb.Scenarios, ", ")))
	}
	if only, extra := setDiff(wa.Metrics, wb.Metrics); len(only)+len(extra) > 0 {
		var parts []string
		if len(only) > 0 {
			parts = append(parts, fmt.Sprintf("%s lacks %s", bn, strings.Join(only, ", ")))
		}
		if len(extra) > 0 {
			parts = append(parts, fmt.Sprintf("%s has %s that %s lacks", bn, strings.Join(extra, ", "), an))
		}
		diffs = append(diffs, "metric set: "+strings.Join(parts, "; "))
	}
	if da, db := a.WholeDuration(), b.WholeDuration(); DurationsDiffer(da, db) {
		d := fmt.Sprintf("duration: %s ran %s, %s ran %s", an, da.Round(time.Second), bn, db.Round(time.Second))
		if wa.Summary != wb.Summary {
			// A summary always covers the whole run; --skip-warmup,
			// --from and --to only cut point streams.
			d += " (a summary file covers the whole run, while --skip-warmup/--from/--to cut only point streams: mix the two kinds without a window, or use one kind)"
		}
		diffs = append(diffs, d)
	}
	return diffs
}

// setDiff returns the items of a missing from b and the items of b missing from a.
func setDiff(a, b []string) (onlyA, onlyB []string) {
	for _, x := range b {
		if !slices.Contains(a, x) {
			onlyB = append(onlyB, x)
		}
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			onlyA = append(onlyA, x)
		}
	}
	return onlyA, onlyB
}
