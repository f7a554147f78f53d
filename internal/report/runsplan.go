package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/k6"
)

// planCandRuns is the number of later runs the runs plan assumes: the
// usual comparison of a release.
const planCandRuns = 3

// runsPlanSection says how many runs a tight envelope needs: for the
// aggregate median, p95 and p99, the run-to-run spread the runs showed,
// how the baseline level's interval and compare's minimum detectable
// change shrink with more baseline runs, and the fewest runs whose MDC
// is within the latency tolerance. "" with fewer than 2 runs or no
// latency.
func runsPlanSection(env *envelope.Envelope) string {
	if env.Latency.P95.N == 0 && env.Latency.Median.N == 0 {
		return ""
	}
	plans := compare.LatencyPlans(env, planCandRuns)
	if len(plans) == 0 {
		return ""
	}
	conf := envPct(figures.Confidence(env.Tolerance.Confidence), 0)
	var b strings.Builder
	p0 := plans[0]
	sizes := make([]string, len(p0.Rows))
	for i, r := range p0.Rows {
		sizes[i] = fmt.Sprint(r.N)
	}
	ns := strings.Join(sizes, " / ")
	fmt.Fprintf(&b, "### Runs a tight envelope needs\n\n")
	fmt.Fprintf(&b, "How closely baseline runs pin each figure's level, from the spread these %s showed (the standard deviation of a run's log value): the %s interval of the baseline's level, and the smallest change `compare` detects with %d later runs (%s confidence, 80%% power), for baselines of %s runs. The band (min–max) does not narrow with more runs, it widens as more runs sample the spread; the level and what a comparison can tell apart tighten as 1/√n.\n\n",
		envCount(p0.Runs)+" runs", conf, p0.CandRuns, conf, ns)
	fmt.Fprintf(&b, "| Figure | Run-to-run SD | Beyond sampling | Level ± (%s runs) | MDC (%s runs) | Runs for MDC ≤ %s |\n", ns, ns, envPct(p0.Tolerance, 0))
	b.WriteString("| :-- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, p := range plans {
		var half, mdc []string
		for _, r := range p.Rows {
			half = append(half, "±"+envPct(r.LevelHalfWidth, 1))
			mdc = append(mdc, envPct(r.MDC, 1))
		}
		beyond := "n/a"
		switch {
		case math.IsNaN(p.RunLevelSD):
		case len(p.Missing) > 0:
			beyond = fmt.Sprintf("%s (%d of %d runs' intervals)", envPct(p.RunLevelSD, 1), p.Runs-len(p.Missing), p.Runs)
		default:
			beyond = envPct(p.RunLevelSD, 1)
		}
		need := fmt.Sprintf("more than %d", compare.PlanMaxRuns)
		if p.Needed > 0 {
			need = fmt.Sprint(p.Needed)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", p.Figure, envPct(p.SD, 1), beyond, strings.Join(half, " / "), strings.Join(mdc, " / "), need)
	}
	fmt.Fprintf(&b, "\n\"Beyond sampling\" is the run-level part of the spread: the runs' variance less their own sampling variance, which each run's own interval of the figure gives (its order-statistic and batch interval, taken from its samples).%s The spread is itself estimated from %d runs, so the projection is rough with few.\n\n", beyondMissing(env, plans), p0.Runs)
	return b.String()
}

// beyondMissing says which runs keep no interval of a figure, and why,
// for the runs plan's "Beyond sampling" column: "" when every run keeps
// every interval. A summary file holds k6's figures, not the samples an
// interval is taken from; a run read from a point stream has its
// intervals, unless the envelope file was written before they were
// kept; a run whose source the file does not name is said to lack them.
func beyondMissing(env *envelope.Envelope, plans []compare.RunsPlan) string {
	labels := envRunLabels(env)
	format := map[string]string{}
	for _, s := range env.Provenance.Sources {
		format[s.File] = s.Format
	}
	var summaries, points, unknown []string
	seen := map[int]bool{}
	var figs []string
	for _, p := range plans {
		if len(p.Missing) > 0 {
			figs = append(figs, string(p.Figure))
		}
		for _, i := range p.Missing {
			if seen[i] || i >= len(env.Runs) {
				continue
			}
			seen[i] = true
			switch f, ok := format[env.Runs[i].Source]; {
			case !ok || f == "":
				unknown = append(unknown, labels[i])
			case k6.Format(f).Summary():
				summaries = append(summaries, labels[i])
			default:
				points = append(points, labels[i])
			}
		}
	}
	if len(figs) == 0 {
		return ""
	}
	var why []string
	if len(summaries) > 0 {
		why = append(why, envList(summaries)+" "+envVerb(len(summaries), "is a k6 summary file, which holds", "are k6 summary files, which hold")+" k6's figures but not the samples an interval is taken from")
	}
	if len(points) > 0 {
		why = append(why, fmt.Sprintf("the envelope file keeps no interval for %s, read from point streams (a file written before runs' intervals were kept: derive it again with `envelope baseline`)", envList(points)))
	}
	if len(unknown) > 0 {
		why = append(why, "the envelope file keeps no interval, and names no source format, for "+envList(unknown))
	}
	return fmt.Sprintf(" Without an interval of the %s: %s. The column is n/a where no run has one, and taken from the runs that have one where some do.", envList(figs), strings.Join(why, "; "))
}
