package rules

import (
	"fmt"
	"strconv"
	"strings"

	c6 "github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// Alert names.
const (
	AlertThroughputLow      = "K6EnvelopeThroughputLow"
	AlertThroughputUnstable = "K6EnvelopeThroughputUnstable"
	AlertLatencyHigh        = "K6EnvelopeLatencyHigh"
	AlertEndpointLatency    = "K6EnvelopeEndpointLatencyHigh"
	AlertRequestsFailing    = "K6EnvelopeRequestsFailing"
	AlertSaturation         = "K6EnvelopeSaturation"
	AlertExporterDown       = "K6EnvelopeExporterDown"
	AlertNoTraffic          = "K6EnvelopeNoTraffic"
)

// maxRulesPerGroup follows the mixin lint limit.
const maxRulesPerGroup = 20

// The k6 series the rules read, named by the catalogue the exporter
// serves them from.
var (
	reqs     = c6.HTTPReqs.Name
	failed   = c6.HTTPReqFailed.Name
	iters    = c6.Iterations.Name
	vus      = c6.VUs.Name
	duration = c6.HTTPReqDuration.Name
)

func buildRecording(env *envelope.Envelope, c *Calibration, o Options) ([]RuleGroup, error) {
	s, err := newScope(env, o)
	if err != nil {
		return nil, err
	}
	// Quantiles for the dashboards: native histogram first, the classic
	// buckets where no native one is scraped.
	q := func(phi string, extra ...string) string {
		return fmt.Sprintf("histogram_quantile(%s, %s) or histogram_quantile(%s, %s)",
			phi, s.sum(fmt.Sprintf("rate(%s%s[1m])", duration, s.sel()), extra...),
			phi, s.sum(fmt.Sprintf("rate(%s_bucket%s[1m])", duration, s.sel()), append(extra, "le")...))
	}
	ratio := func(extra ...string) string {
		all := s.sum(fmt.Sprintf("rate(%s%s[1m])", failed, s.sel()), extra...)
		return fmt.Sprintf(`(%s or 0 * %s) / %s`, s.sum(fmt.Sprintf("rate(%s%s[1m])", failed, s.sel(c6.NonzeroMatcher)), extra...), all, all)
	}
	rate := func(metric string, extra ...string) string {
		return s.sum(fmt.Sprintf("rate(%s%s[1m])", metric, s.sel()), extra...)
	}
	rec := func(name, expr string) Rule {
		return Rule{Record: name, Expr: expr, Labels: map[string]string{EnvelopeLabel: s.name}}
	}
	g := RuleGroup{Name: s.group("k6.rules"), Rules: []Rule{
		rec(c6.RecThroughput, rate(reqs)),
		rec(c6.RecIterationRate, rate(iters)),
		rec(c6.RecErrorRatio, ratio()),
		rec(c6.RecLatencyP50, q("0.5")),
		rec(c6.RecLatencyP95, q("0.95")),
		rec(c6.RecLatencyP99, q("0.99")),
		rec(c6.RecThroughputCV, fmt.Sprintf("stddev_over_time(%[1]s[10m]) / avg_over_time(%[1]s[10m])", s.rec(c6.RecThroughput))),
		rec(c6.RecEndpointRate, rate(reqs, "name")),
		rec(c6.RecEndpointErrorRatio, ratio("name")),
		rec(c6.RecEndpointP50, q("0.5", "name")),
		rec(c6.RecEndpointP95, q("0.95", "name")),
		rec(c6.RecEndpointP99, q("0.99", "name")),
		rec(c6.RecThroughputPerVU, fmt.Sprintf("%s / %s %s", s.rec(c6.RecThroughput), s.on(), s.sum(vus+s.vuSel()))),
		rec(c6.RecThroughputVsEnvelope, fmt.Sprintf("%s / %s", s.rec(c6.RecThroughput), fmtFloat(c.Throughput.Mean))),
		rec(c6.RecLatencyP95VsEnvelope, fmt.Sprintf("%s / %s", s.rec(c6.RecLatencyP95), fmtFloat(env.Latency.P95.Max/1000))),
	}}
	return []RuleGroup{g}, nil
}

// fullWindow is true for a test once its request counter has existed
// for a whole window, so a rate is not read off a partly filled window.
func fullWindow(s scope, w string) string {
	return s.sum(fmt.Sprintf("%s%s offset %s", reqs, s.sel(), w))
}

// growingThroughput is the throughput alert's condition over a window
// that grows with the run: at each evaluation the longest of the steps'
// windows the test has filled, below that window's floor, and VUs
// active. One branch holds at a time (each is cut off once the next
// window is full), so each evaluation is one test at the false-alarm
// budget, as with one window.
func growingThroughput(s scope, steps []ThroughputStep) string {
	var br []string
	for i, st := range steps {
		b := fmt.Sprintf("%s < %s and %s %s", s.sum(fmt.Sprintf("rate(%s%s[%s])", reqs, s.sel(), st.WindowStr)), fmtFloat(st.Floor), s.on(), fullWindow(s, st.WindowStr))
		if i+1 < len(steps) {
			b += fmt.Sprintf(" unless %s %s", s.on(), fullWindow(s, steps[i+1].WindowStr))
		}
		br = append(br, b)
	}
	cond := br[0]
	if len(br) > 1 {
		cond = "(" + strings.Join(br, " or ") + ")"
	}
	return fmt.Sprintf("%s and %s %s", cond, s.on(), running(s))
}

// stepList is "4m, 5m": the growing window's steps.
func stepList(steps []ThroughputStep) string {
	var w []string
	for _, st := range steps {
		w = append(w, st.WindowStr)
	}
	return strings.Join(w, ", ")
}

// stepFloors is "51.7 (4m), 51.84 (5m)", or the one floor.
func stepFloors(steps []ThroughputStep) string {
	if len(steps) == 1 {
		return fmtFloat(steps[0].Floor)
	}
	var f []string
	for _, st := range steps {
		f = append(f, fmt.Sprintf("%s (%s)", fmtFloat(st.Floor), st.WindowStr))
	}
	return strings.Join(f, ", ")
}

// running is true while the test has active VUs.
func running(s scope) string { return s.sum(vus+s.vuSel()) + " > 0" }

// slowFraction is the alert condition "more than the tail fraction of the
// requests slower than X". It is exact on the classic bucket at le=X; the
// native histogram's estimate judges only the tests for which that bucket
// is not exposed, so where both are scraped the estimate never fires
// against the exact figure.
func slowFraction(s scope, series, endpointSel string, b LatencyBound, z float64, w string) string {
	tail := fmtFloat(b.Tail)
	v := fmtFloat(round4(b.Tail * (1 - b.Tail)))
	zs := fmtFloat(round4(z))
	corr := fmtFloat(round4(binomialCorrection(b.Tail, z)))
	x := fmtFloat(b.Threshold)
	le := series + "_bucket" + s.sel(endpointSel, `le="`+b.Le+`"`)
	inf := series + "_bucket" + s.sel(endpointSel, `le="+Inf"`)
	native := series + s.sel(endpointSel)
	classicF := fmt.Sprintf("(1 - %s / %s)", s.sum(fmt.Sprintf("rate(%s[%s])", le, w)), s.sum(fmt.Sprintf("rate(%s[%s])", inf, w)))
	classicN := s.sum(fmt.Sprintf("increase(%s[%s])", inf, w))
	nativeF := fmt.Sprintf("(1 - histogram_fraction(0, %s, %s))", x, s.sum(fmt.Sprintf("rate(%s[%s])", native, w)))
	nativeN := fmt.Sprintf("histogram_count(%s)", s.sum(fmt.Sprintf("increase(%s[%s])", native, w)))
	classicPresent := fmt.Sprintf("count by (%s) (%s)", s.by(), le)
	bound := func(n string) string {
		return fmt.Sprintf("(%s + %s * sqrt(%s / %s) + %s / %s)", tail, zs, v, n, corr, n)
	}
	return fmt.Sprintf("(%s > %s or (%s > %s unless %s %s))", classicF, bound(classicN), nativeF, bound(nativeN), s.on(), classicPresent)
}

func errorsCondition(s scope, c *Calibration, w string) string {
	nz := failed + s.sel(c6.NonzeroMatcher)
	if c.Errors.Zero {
		return fmt.Sprintf("(%s > 0 or %s > 0)", s.sum(fmt.Sprintf("increase(%s[%s])", nz, w)), s.sum(fmt.Sprintf("%[1]s unless %[1]s offset %[2]s", nz, w)))
	}
	p := c.Errors.Ratio
	n := s.sum(fmt.Sprintf("increase(%s%s[%s])", failed, s.sel(), w))
	return fmt.Sprintf("(%s / %s > (%s + %s * sqrt(%s / %s) + %s / %s))",
		s.sum(fmt.Sprintf("rate(%s[%s])", nz, w)), s.sum(fmt.Sprintf("rate(%s%s[%s])", failed, s.sel(), w)),
		fmtFloat(p), fmtFloat(round4(c.Z)), fmtFloat(p*(1-p)), n, fmtFloat(round4(binomialCorrection(p, c.Z))), n)
}

func quantileName(q float64) string { return "p" + strings.TrimPrefix(fmtFloat(q*100), "0") }

func buildAlerts(env *envelope.Envelope, c *Calibration, o Options) ([]RuleGroup, error) {
	s, err := newScope(env, o)
	if err != nil {
		return nil, err
	}
	w := c.WindowStr
	rs := throughputAlerts(s, c, o)
	for _, b := range c.Latency {
		qn := quantileName(b.Quantile)
		rs = append(rs, Rule{
			Alert:  AlertLatencyHigh,
			Expr:   slowFraction(s, duration, "", b, c.Z, w) + " and " + s.on() + " " + running(s),
			For:    "1m",
			Labels: map[string]string{"severity": "warning", "quantile": fmtFloat(b.Quantile)},
			Annotations: ann(o, AlertLatencyHigh, "Request latency of the k6 test is above the envelope band.",
				fmt.Sprintf("Test {{ $labels.testid }}: {{ $value | humanizePercentage }} of requests over the last %s took longer than %s ms, so %s is above it. The envelope's %s band is %s–%s ms; %s ms adds the %s tolerance. At the envelope's rate the alert needs more than %s slow requests.",
					w, fmtMS(b.Threshold), qn, qn, fmtFloat(round4(b.BandMin)), fmtFloat(round4(b.BandMax)), fmtMS(b.Threshold), pct(b.Rise), pct(b.ExpectedBound))),
		})
	}

	rs = append(rs, Rule{
		Alert:  AlertRequestsFailing,
		Expr:   errorsCondition(s, c, w),
		For:    "1m",
		Labels: map[string]string{"severity": "critical"},
		Annotations: ann(o, AlertRequestsFailing, "Requests of the k6 test are failing.",
			errorsDescription(env, c, w)),
	})

	rs = append(rs, saturationAlert(env, s, c, o))
	rs = append(rs, availabilityAlerts(s, c, o)...)
	for i := range rs {
		rs[i].Labels = s.labels(rs[i].Labels)
	}
	return []RuleGroup{{Name: s.group("k6-alerts"), Rules: rs}}, nil
}

// throughputAlerts are the throughput floor and stability alerts.
func throughputAlerts(s scope, c *Calibration, o Options) []Rule {
	t := c.Throughput
	tw := t.WindowStr
	z := fmtFloat(round4(c.Z))
	var rs []Rule
	// The throughput alert reads its own window, growing with the run
	// (calibrate.go): a 6-minute run must show a 2×tolerance drop within
	// window + for.
	rs = append(rs, Rule{
		Alert:  AlertThroughputLow,
		Expr:   growingThroughput(s, t.Steps),
		For:    "1m",
		Labels: map[string]string{"severity": "warning"},
		Annotations: ann(o, AlertThroughputLow, "Throughput of the k6 test is below the envelope band.",
			fmt.Sprintf("Test {{ $labels.testid }} made {{ $value | humanize }} req/s over the longest of %s the run has filled. The envelope's throughput band is %s–%s req/s (mean %s, run-to-run CV %s); the calibrated floor is %s req/s: band min −%s tolerance, minus z=%s × the window's relative noise (%s at %s).",
				stepList(t.Steps), fmtFloat(round4(t.Min)), fmtFloat(round4(t.Max)), fmtFloat(round4(t.Mean)), pct(t.EnvCV), stepFloors(t.Steps), pct(t.Drop), z, pct(t.SigmaRel), tw)),
	})

	cv := c.CV
	rs = append(rs, Rule{
		Alert: AlertThroughputUnstable,
		Expr: fmt.Sprintf("%s > %s and %s %s and %s %s",
			s.rec(c6.RecThroughputCV), fmtFloat(cv.Bound), s.on(), fullWindow(s, "11m"), s.on(), running(s)),
		For:    "5m",
		Labels: map[string]string{"severity": "warning"},
		Annotations: ann(o, AlertThroughputUnstable, "Throughput of the k6 test varies more than the envelope allows.",
			fmt.Sprintf("Test {{ $labels.testid }}: the CV of the 1m request rate over 10m is {{ $value | humanizePercentage }}. The envelope's run-to-run CV is %s; with 1m counting noise the expected CV is %s and the calibrated bound is %s.",
				pct(t.EnvCV), pct(cv.Expected), pct(cv.Bound))),
	})
	return rs
}

// saturationAlert fires when throughput stops keeping up with the load
// while latency or errors are out of the envelope.
func saturationAlert(env *envelope.Envelope, s scope, c *Calibration, o Options) Rule {
	t := c.Throughput
	tw := t.WindowStr
	w := c.WindowStr
	// The floor is calibrated for the throughput window, so the
	// saturation alert reads throughput over that window too.
	reqRate := s.sum(fmt.Sprintf("rate(%s%s[%s])", reqs, s.sel(), tw))
	sat := fmt.Sprintf("%s < %s", reqRate, fmtFloat(t.Floor))
	satWhat := fmt.Sprintf("{{ $value | humanize }} req/s against a floor of %s req/s", fmtFloat(t.Floor))
	if t.FloorPerVU > 0 {
		sat = fmt.Sprintf("%s / %s %s < %s", reqRate, s.on(), s.sum(vus+s.vuSel()), fmtFloat(t.FloorPerVU))
		satWhat = fmt.Sprintf("{{ $value | humanize }} req/s per VU against a floor of %s (%s VUs in the envelope)", fmtFloat(t.FloorPerVU), strconv.Itoa(c.VUs))
	}
	// Latency joins the failed requests as a sign where the runs
	// estimate the aggregate p95.
	signs := errorsCondition(s, c, w)
	what := "requests fail"
	if p95, ok := c.latencyBound(0.95); ok {
		signs = "(" + slowFraction(s, duration, "", p95, c.Z, w) + " or " + signs + ")"
		what = fmt.Sprintf("p95 latency over the last %s is above %s ms or requests fail", w, fmtMS(p95.Threshold))
	}
	return Rule{
		Alert: AlertSaturation,
		Expr: fmt.Sprintf("%s and %s %s and %s %s",
			sat, s.on(), fullWindow(s, w), s.on(), signs),
		For:    "2m",
		Labels: map[string]string{"severity": "critical"},
		Annotations: ann(o, AlertSaturation, "The system under test looks saturated.",
			fmt.Sprintf("Test {{ $labels.testid }} makes %s over the last %s while %s: throughput stopped keeping up with the load. The envelope was taken below saturation (%s).",
				satWhat, tw, what, templateText(env.Saturation.Verdict, "verdict not recorded"))),
	}
}

// availabilityAlerts are about the data itself: the exporter down, and a
// running test that makes no requests.
func availabilityAlerts(s scope, c *Calibration, o Options) []Rule {
	var rs []Rule
	sel := o.ExporterSelector
	rs = append(rs, Rule{
		Alert:  AlertExporterDown,
		Expr:   fmt.Sprintf("up{%[1]s} == 0 or absent(up{%[1]s})", sel),
		For:    "1m",
		Labels: map[string]string{"severity": "critical"},
		Annotations: ann(o, AlertExporterDown, "The envelope exporter is down or not scraped.",
			"The envelope exporter target {{ $labels.instance }} ({{ $labels.job }}) reports up = {{ $value }}, or no target matches "+templateText(sel, "")+": k6 series and envelope alerts have no data."),
	})

	idle := fmt.Sprintf("%s unless %s %s > 0", running(s), s.on(), s.sum(fmt.Sprintf("rate(%s%s[2m])", reqs, s.sel())))
	if s.perRequest {
		// The VU gauge cannot carry a per-request tag: the test must have
		// shown the match on its iterations.
		idle = fmt.Sprintf("(%s) and %s %s", idle, s.on(), s.sum(fmt.Sprintf("%s%s", iters, s.sel())))
	}
	rs = append(rs, Rule{
		Alert:  AlertNoTraffic,
		Expr:   idle,
		For:    "2m",
		Labels: map[string]string{"severity": "warning"},
		Annotations: ann(o, AlertNoTraffic, "A k6 test is running but makes no requests.",
			fmt.Sprintf("Test {{ $labels.testid }} has {{ $value }} active VUs but no HTTP requests over the last 2m; the envelope expects %s req/s.", fmtFloat(round4(c.Throughput.Mean)))),
	})
	return rs
}

func errorsDescription(env *envelope.Envelope, c *Calibration, w string) string {
	base := fmt.Sprintf("the envelope recorded %d failed of %d requests", env.Errors.Failed, env.Errors.Total)
	if c.Errors.Zero {
		return fmt.Sprintf("Test {{ $labels.testid }} had {{ $value | humanize }} failed requests over the last %s; %s and allows none.", w, base)
	}
	return fmt.Sprintf("Test {{ $labels.testid }}: {{ $value | humanizePercentage }} of requests failed over the last %s; %s and allows %s, plus the binomial margin for the window's request count.", w, base, pct(c.Errors.Ratio))
}

func buildEndpointAlerts(env *envelope.Envelope, c *Calibration, o Options) ([]RuleGroup, error) {
	s, err := newScope(env, o)
	if err != nil {
		return nil, err
	}
	w := c.WindowStr
	var rs []Rule
	for _, e := range c.Endpoints {
		for _, b := range e.Latency {
			qn := quantileName(b.Quantile)
			need := ""
			if b.ExpectedBound > 0 {
				need = fmt.Sprintf(" At the endpoint's expected %s req/s the alert needs more than %s slow requests.", fmtFloat(round4(e.Rate)), pct(b.ExpectedBound))
			}
			rs = append(rs, Rule{
				Alert:  AlertEndpointLatency,
				Expr:   slowFraction(s, e.Series, e.Selector, b, c.Z, w) + " and " + s.on() + " " + running(s),
				For:    "1m",
				Labels: s.labels(map[string]string{"severity": "warning", "endpoint": templateText(e.Key, ""), "quantile": fmtFloat(b.Quantile)}),
				Annotations: ann(o, AlertEndpointLatency, "Endpoint latency of the k6 test is above the envelope band.",
					fmt.Sprintf("Test {{ $labels.testid }}, endpoint %s: {{ $value | humanizePercentage }} of its requests over the last %s took longer than %s ms, so %s is above it. The envelope's %s band for this endpoint is %s–%s ms; %s ms adds the %s tolerance.%s",
						templateText(e.Key, ""), w, fmtMS(b.Threshold), qn, qn, fmtFloat(round4(b.BandMin)), fmtFloat(round4(b.BandMax)), fmtMS(b.Threshold), pct(b.Rise), need)),
			})
		}
	}
	var gs []RuleGroup
	for i := 0; i < len(rs); i += maxRulesPerGroup {
		end := min(i+maxRulesPerGroup, len(rs))
		name := s.group("k6-endpoint-alerts")
		if i > 0 {
			name = fmt.Sprintf("%s-%d", name, i/maxRulesPerGroup+1)
		}
		gs = append(gs, RuleGroup{Name: name, Rules: rs[i:end]})
	}
	return gs, nil
}

// ann builds the annotations every alert carries.
func ann(o Options, alert, summary, description string) map[string]string {
	return map[string]string{
		"summary":     summary,
		"description": description,
		"runbook_url": o.RunbookURL + "#" + strings.ToLower(alert),
	}
}

// templateText makes s safe as literal text of an alert template: text
// holding template delimiters is emitted as a quoted template string.
func templateText(s, empty string) string {
	if s == "" {
		return empty
	}
	if strings.Contains(s, "{{") || strings.Contains(s, "}}") {
		return "{{ " + strconv.Quote(s) + " }}"
	}
	return s
}

// promString quotes s as a PromQL string literal.
func promString(s string) string { return strconv.Quote(s) }

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func fmtMS(seconds float64) string { return fmtFloat(round4(seconds * 1000)) }

func pct(r float64) string {
	return strconv.FormatFloat(round4(r*100), 'g', -1, 64) + "%"
}
