package rules

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/stats"
)

// Calibration holds every threshold the alerts use and how it was
// derived, so docs/rules.md and the tests can show the arithmetic.
//
// The formulas (docs/rules.md explains them):
//
//   - z is the one-sided normal quantile of the false-alarm budget per
//     evaluation (Tolerance.FalseAlarm; 0.001 gives z = 3.09).
//   - Throughput floor = band min × (1 − ThroughputDrop) × (1 − z·σ), with
//     σ = √(CV² + 1/(mean·W)): the run-to-run spread and the Poisson
//     counting noise of one W-second rate window, relative. W is the
//     throughput window: the shortest of 1m, 2m, 3m, 4m, 5m (never longer
//     than Tolerance.Window) whose floor sits at least z_d·σ_d above a run
//     dropped by twice the tolerance, r_d = band min × (1 − 2·ThroughputDrop),
//     σ_d = r_d·√(CV² + 1/(r_d·W)), z_d = 2.326 (such a run stays below
//     the floor through the five evaluations of `for` in 95% of runs;
//     DetectZ). A shorter window sees a drop sooner;
//     the search stops at the first one that still sees it reliably.
//   - Latency, for Q = 0.95, 0.99 and the median (median.go explains
//     why): "pQ above X" is "more than a tail fraction t = 1 − Q of the
//     requests slower than X", read exactly from the classic bucket at
//     le = X, where X = band max × (1 + LatencyRise), in seconds rounded
//     to the microsecond (envelope.Threshold, which also gives the exporter's
//     bucket edges). The alert compares the observed slow fraction with the
//     binomial upper bound t + z·√(t(1−t)/n) + c/n for the n requests
//     actually in the window (c: continuity and skew correction), so a
//     thin window never alarms on a few slow requests.
//   - Errors: any failed request when the envelope holds zero errors;
//     otherwise the same binomial bound around Tolerance.ErrorRatio.
//   - Throughput CV: the 1m-rate CV over 10m is bounded by
//     √(CV² + 1/(mean·60)) × √(χ²₁₋α(k)/k), k = 9 effective degrees of
//     freedom, or Tolerance.MaxCV when that is larger.
type Calibration struct {
	Window     time.Duration
	WindowStr  string
	FalseAlarm float64
	Z          float64
	VUs        int

	Throughput ThroughputBound
	CV         CVBound
	Latency    []LatencyBound // overall http_req_duration
	Endpoints  []EndpointBound
	Errors     ErrorBound
	// Unestimated are the latency tests left out: percentiles the
	// envelope's runs have too few requests of to estimate.
	Unestimated []Unestimated
}

// Unestimated is a percentile no alert is generated for: some baseline
// run has fewer requests of its trend than the percentile needs
// (figures.Def.Supported), so its band is one of a few slowest requests
// rather than a tail.
type Unestimated struct {
	Endpoint string // "" for http_req_duration
	Quantile float64
	// Why says what the percentile needs and what the runs had
	// (figures.Support.Shortfall).
	Why string
}

// estimated says whether the envelope's runs estimate the percentile q
// of an endpoint's trend ("" for http_req_duration), and records the
// test left out when they do not.
func (c *Calibration) estimated(env *envelope.Envelope, endpoint string, q float64) bool {
	n := quantileFigure(q)
	s := env.Support(endpoint)
	if s.Estimates(n) {
		return true
	}
	who := "the runs"
	if endpoint != "" {
		who = endpoint
	}
	c.Unestimated = append(c.Unestimated, Unestimated{Endpoint: endpoint, Quantile: q, Why: s.Shortfall(n, who)})
	return false
}

// quantileFigure is the figure of a test's quantile.
func quantileFigure(q float64) figures.Name {
	for _, n := range figures.Percentiles() {
		if n.Def().Quantile == q {
			return n
		}
	}
	return ""
}

// latencyBound is the overall test of quantile q, when calibrated.
func (c *Calibration) latencyBound(q float64) (LatencyBound, bool) {
	for _, b := range c.Latency {
		if b.Quantile == q {
			return b, true
		}
	}
	return LatencyBound{}, false
}

// ThroughputBound is the calibrated floor of the http_reqs rate.
type ThroughputBound struct {
	Mean, Min, Max float64 // envelope band, req/s
	EnvCV          float64 // run-to-run CV
	NoiseRel       float64 // 1/√(mean·W)
	SigmaRel       float64 // √(CV² + NoiseRel²)
	Drop           float64 // tolerance
	Floor          float64 // req/s
	FloorPerVU     float64 // req/s per VU, 0 without a VU count

	// Window is the rate window of the throughput alerts (see
	// throughputWindows), WindowStr as PromQL writes it.
	Window    time.Duration
	WindowStr string
	// Dropped is a run at twice the tolerance below the band (req/s), and
	// Separation how many of its window σ it sits below the floor.
	Dropped    float64
	Separation float64
	// Steps are the windows the throughput alert reads as the run goes
	// on, each with its own floor, the longest one the run has filled
	// taken at each evaluation: every window of throughputWindows up to
	// the latency window whose floor lies above the dropped run, and
	// Window. The window grows from the start of the run: a drop can
	// start the alert's `for` on a shorter window before Window is
	// full, and a longer one keeps it below the floor by a wider margin
	// after.
	Steps []ThroughputStep
}

// ThroughputStep is one window of the growing throughput window.
type ThroughputStep struct {
	Window     time.Duration
	WindowStr  string
	Floor      float64 // req/s
	Separation float64 // of the dropped run, in its window σ
}

// throughputWindows are the rate windows the calibrator tries for the
// throughput alerts, shortest first.
var throughputWindows = [...]time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute}

// DetectZ is the separation, in σ of the dropped run's rate over one
// window, that the throughput window must give between a run dropped by
// twice the tolerance and the floor. The alert fires only when the rate
// stays below the floor at each of the five evaluations its `for: 1m`
// spans (15 s apart), so each may miss with 1% at most (Bonferroni,
// Φ⁻¹(1 − 0.05/5)): such a run then fires in at least 95% of runs. The
// one-sided 95% quantile (1.645) held each evaluation alone and detected
// a −10% run in 90% of runs.
const DetectZ = 2.3263

// throughputFloor is the calibrated floor for a window of ws seconds.
func throughputFloor(tp envelope.Spread, drop, z, ws float64) (noise, sigma, floor float64) {
	noise = 1 / math.Sqrt(tp.Mean*ws)
	sigma = math.Hypot(tp.CV, noise)
	return noise, sigma, round4(tp.Min * (1 - drop) * (1 - z*sigma))
}

// separation is how many σ of its own window rate a run at rate r sits
// below floor, σ combining the run-to-run CV and the window's counting
// noise at r.
func separation(floor, r, cv, ws float64) float64 {
	if r <= 0 {
		return 0
	}
	return (floor - r) / (r * math.Hypot(cv, 1/math.Sqrt(r*ws)))
}

// CVBound is the calibrated ceiling of the throughput CV recording.
type CVBound struct {
	Expected float64 // √(CV² + 1/(mean·60))
	DOF      int
	Factor   float64 // √(χ²₁₋α(k)/k)
	MaxCV    float64 // tolerance
	Bound    float64
}

// LatencyBound is one "quantile above X" test.
type LatencyBound struct {
	Quantile  float64 // 0.95 or 0.99
	BandMin   float64 // ms
	BandMax   float64 // ms
	Rise      float64 // tolerance
	Threshold float64 // X, seconds, rounded to the microsecond
	Le        string  // X as Prometheus writes the le label
	Tail      float64 // 1 − Quantile
	// ExpectedN is the requests expected in one window (0 when unknown),
	// and ExpectedBound the slow fraction that alerts at that n.
	ExpectedN     float64
	ExpectedBound float64
}

// EndpointBound is one endpoint's series and latency bounds.
type EndpointBound struct {
	Key      string // envelope key
	Series   string // histogram base name, e.g. k6_auth_login_seconds
	Selector string // PromQL matchers without braces, "" for a custom trend
	Rate     float64
	Latency  []LatencyBound
}

// ErrorBound is the failed-request condition.
type ErrorBound struct {
	Zero  bool    // any failed request alerts
	Ratio float64 // allowed ratio otherwise
}

// ErrMissingField is wrapped by every "the envelope lacks X" error.
var ErrMissingField = errors.New("missing field")

func missing(field, why string) error {
	return fmt.Errorf("envelope: %s: %w (%s)", field, ErrMissingField, why)
}

// Calibrate validates env for rule generation and computes every bound.
// Errors name the envelope field at fault.
func Calibrate(env *envelope.Envelope) (*Calibration, error) {
	if env == nil {
		return nil, errors.New("envelope: nil")
	}
	tol := env.Tolerance
	def := figures.DefaultTolerance()
	if tol.Window == "" {
		return nil, missing("tolerance.window", "the alert rate window, e.g. 5m")
	}
	w, err := model.ParseDuration(tol.Window)
	if err != nil || w <= 0 {
		return nil, fmt.Errorf("envelope: tolerance.window: %q is not a Prometheus duration", tol.Window)
	}
	if time.Duration(w) < time.Minute {
		return nil, fmt.Errorf("envelope: tolerance.window: %s is shorter than 1m (4 scrapes at 15s)", tol.Window)
	}
	fa := tol.FalseAlarm
	if fa == 0 {
		fa = def.FalseAlarm
	}
	if fa <= 0 || fa >= 0.5 {
		return nil, fmt.Errorf("envelope: tolerance.false_alarm: %g is outside (0, 0.5)", tol.FalseAlarm)
	}
	for name, v := range map[string]float64{"tolerance.throughput_drop": tol.ThroughputDrop, "tolerance.latency_rise": tol.LatencyRise, "tolerance.error_ratio": tol.ErrorRatio, "tolerance.max_cv": tol.MaxCV} {
		if v < 0 || v >= 1 || math.IsNaN(v) {
			return nil, fmt.Errorf("envelope: %s: %g is outside [0, 1)", name, v)
		}
	}
	c := &Calibration{
		Window:     time.Duration(w),
		WindowStr:  w.String(),
		FalseAlarm: fa,
		Z:          stats.NormalQuantile(1 - fa),
		VUs:        env.Provenance.Workload.VUs,
	}
	if err := c.throughput(env.Throughput, tol); err != nil {
		return nil, err
	}
	// Throughput CV over 10m of 1m rates: 40 samples, about 9 independent.
	tp := env.Throughput
	cv := CVBound{DOF: 9, MaxCV: tol.MaxCV}
	cv.Expected = math.Hypot(tp.CV, 1/math.Sqrt(tp.Mean*60))
	cv.Factor = math.Sqrt(chiSquareQuantile(1-fa, cv.DOF) / float64(cv.DOF))
	cv.Bound = round4(math.Max(cv.Expected*cv.Factor, tol.MaxCV))
	c.CV = cv

	if err := c.latency(env, tol); err != nil {
		return nil, err
	}
	if err := c.endpoints(env, tol); err != nil {
		return nil, err
	}
	// The error alert needs the envelope's own error count: a missing
	// errors section must not read as "zero errors". The allowed ratio is
	// the larger of the policy and what the baseline itself recorded, so an
	// envelope that holds errors never alerts on its own error rate.
	if env.Errors.Total <= 0 {
		return nil, missing("errors.total", "the request count the error rate is judged against")
	}
	if env.Errors.Failed < 0 || env.Errors.Failed > env.Errors.Total {
		return nil, fmt.Errorf("envelope: errors.failed: %d is outside [0, errors.total=%d]", env.Errors.Failed, env.Errors.Total)
	}
	ratio := math.Max(tol.ErrorRatio, round4(float64(env.Errors.Failed)/float64(env.Errors.Total)))
	c.Errors = ErrorBound{Zero: ratio == 0, Ratio: ratio}
	return c, nil
}

// throughput calibrates the throughput floor and its window.
func (c *Calibration) throughput(tp envelope.Spread, tol figures.Tolerance) error {
	if tp.Mean <= 0 {
		return missing("throughput.mean", "the request rate the floor is built on")
	}
	if tp.Min <= 0 {
		return missing("throughput.min", "the bottom of the throughput band")
	}
	t := ThroughputBound{Mean: tp.Mean, Min: tp.Min, Max: tp.Max, EnvCV: tp.CV, Drop: tol.ThroughputDrop}
	t.Dropped = tp.Min * (1 - 2*t.Drop)
	// Shortest window that still separates a 2×tolerance drop; the
	// latency window when none does (a zero tolerance, a thin rate).
	t.Window = c.Window
	for _, tw := range throughputWindows {
		if tw > c.Window {
			break
		}
		_, _, f := throughputFloor(tp, t.Drop, c.Z, tw.Seconds())
		if f > 0 && separation(f, t.Dropped, tp.CV, tw.Seconds()) >= DetectZ {
			t.Window = tw
			break
		}
	}
	t.WindowStr = model.Duration(t.Window).String()
	tws := t.Window.Seconds()
	t.NoiseRel, t.SigmaRel, t.Floor = throughputFloor(tp, t.Drop, c.Z, tws)
	t.Separation = round4(separation(t.Floor, t.Dropped, tp.CV, tws))
	if t.Floor <= 0 {
		return fmt.Errorf("envelope: throughput: the calibrated floor is not positive (mean %g req/s is too low for a %s window)", tp.Mean, t.WindowStr)
	}
	if c.VUs > 0 {
		t.FloorPerVU = round4(t.Floor / float64(c.VUs))
	}
	// The growing window's steps: every window up to the latency window
	// whose floor lies above the dropped run at all (a shorter one can
	// only start the alert's `for` sooner), and W itself.
	for _, tw := range throughputWindows {
		if tw > c.Window {
			break
		}
		if tw == t.Window {
			t.Steps = append(t.Steps, ThroughputStep{Window: t.Window, WindowStr: t.WindowStr, Floor: t.Floor, Separation: t.Separation})
			continue
		}
		_, _, f := throughputFloor(tp, t.Drop, c.Z, tw.Seconds())
		if sep := separation(f, t.Dropped, tp.CV, tw.Seconds()); f > 0 && sep > 0 {
			t.Steps = append(t.Steps, ThroughputStep{Window: tw, WindowStr: model.Duration(tw).String(), Floor: f, Separation: round4(sep)})
		}
	}
	if len(t.Steps) == 0 || t.Steps[len(t.Steps)-1].Window < t.Window {
		// W is the latency window, not one of throughputWindows.
		t.Steps = append(t.Steps, ThroughputStep{Window: t.Window, WindowStr: t.WindowStr, Floor: t.Floor, Separation: t.Separation})
	}
	c.Throughput = t
	return nil
}

// latency calibrates the overall p95, p99 and median tests, each only
// where the runs estimate it.
func (c *Calibration) latency(env *envelope.Envelope, tol figures.Tolerance) error {
	tp := env.Throughput
	overallN := tp.Mean * c.Window.Seconds()
	for _, q := range []struct {
		field string
		quant float64
		band  envelope.Band
	}{{"latency.p95", 0.95, env.Latency.P95}, {"latency.p99", 0.99, env.Latency.P99}} {
		if q.band.Max <= 0 {
			return missing(q.field+".max", "the top of the band the latency alert is built on")
		}
		if c.estimated(env, "", q.quant) {
			c.Latency = append(c.Latency, latencyBound(q.quant, q.band, tol.LatencyRise, overallN, c.Z))
		}
	}
	// The median test comes after p95 and p99.
	if b, ok := medianBound(env.Latency.Median, tol.LatencyRise, overallN, c.Z); ok && c.estimated(env, "", MedianQuantile) {
		c.Latency = append(c.Latency, b)
	}
	return nil
}

// endpoints calibrates each endpoint's latency tests, in key order, each
// only where the runs estimate it; an endpoint none of whose tests they
// estimate gets none.
func (c *Calibration) endpoints(env *envelope.Envelope, tol figures.Tolerance) error {
	tp := env.Throughput
	keys := make([]string, 0, len(env.Endpoints))
	for k := range env.Endpoints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ep := env.Endpoints[k]
		field := fmt.Sprintf("endpoints[%q]", k)
		if k == "" {
			return fmt.Errorf("envelope: endpoints: an endpoint has an empty name")
		}
		b := EndpointBound{Key: k, Rate: ep.Share * tp.Mean}
		// Which series an endpoint's bands are measured on is decided
		// once, by envelope.Endpoint.Trend: the exporter adds the band
		// edges to that trend's buckets.
		switch trend := ep.Trend(); {
		case trend == "":
			return missing(field+".metric", "an endpoint needs a custom trend metric, or tag and value")
		case ep.Metric != "":
			b.Series = catalogue.SeriesName(trend, "trend", "time")
		default:
			if !catalogue.IsDefaultK6Label(ep.Tag) {
				return fmt.Errorf("envelope: %s.tag: %q is not a label the exporter exposes (%s)", field, ep.Tag, strings.Join(catalogue.DefaultK6Labels(), ", "))
			}
			b.Series = catalogue.HTTPReqDuration.Name
			b.Selector = ep.Tag + "=" + promString(ep.Value)
		}
		n := b.Rate * c.Window.Seconds()
		if ep.P95.Max <= 0 && ep.P99.Max <= 0 {
			return missing(field+".p95.max", "an endpoint needs a p95 or p99 band")
		}
		if ep.P95.Max > 0 && c.estimated(env, k, 0.95) {
			b.Latency = append(b.Latency, latencyBound(0.95, ep.P95, tol.LatencyRise, n, c.Z))
		}
		if ep.P99.Max > 0 && c.estimated(env, k, 0.99) {
			b.Latency = append(b.Latency, latencyBound(0.99, ep.P99, tol.LatencyRise, n, c.Z))
		}
		if m, ok := medianBound(ep.Median, tol.LatencyRise, n, c.Z); ok && c.estimated(env, k, MedianQuantile) {
			b.Latency = append(b.Latency, m)
		}
		if len(b.Latency) > 0 {
			c.Endpoints = append(c.Endpoints, b)
		}
	}
	return nil
}

func latencyBound(q float64, band envelope.Band, rise, n, z float64) LatencyBound {
	// The bucket bound the exporter adds for this band
	// (envelope.BucketEdges), so the le the rule selects is served.
	x := envelope.Threshold(band, rise)
	b := LatencyBound{Quantile: q, BandMin: band.Min, BandMax: band.Max, Rise: rise, Threshold: x, Le: LeValue(x), Tail: round4(1 - q), ExpectedN: n}
	if n > 0 {
		b.ExpectedBound = b.SlowFractionBound(n, z)
	}
	return b
}

// SlowFractionBound is the share of requests slower than b.Threshold above
// which the "quantile above X" alert fires over a window holding n
// requests: the binomial bound the generated expression evaluates, at the
// calibration's z. Calibration records it at the expected n
// (ExpectedBound); backtests use it to tell when a regression becomes
// visible to the rule.
func (b LatencyBound) SlowFractionBound(n, z float64) float64 {
	return binomialBound(b.Tail, n, z)
}

// binomialBound is the one-sided upper bound of a fraction observed over
// n trials when the true fraction is p: normal approximation with the
// continuity correction and the Cornish-Fisher skew term.
func binomialBound(p, n, z float64) float64 {
	return p + z*math.Sqrt(p*(1-p)/n) + binomialCorrection(p, z)/n
}

func binomialCorrection(p, z float64) float64 {
	return (z*z-1)*(1-2*p)/6 + 0.5
}

// LeValue formats a bucket edge as Prometheus 3 stores the le label
// (floats normalized: 1 becomes "1.0").
func LeValue(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	s := fmtFloat(v)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// chiSquareQuantile is the Wilson–Hilferty approximation of the p
// quantile of χ² with k degrees of freedom (within 1% for k ≥ 3).
func chiSquareQuantile(p float64, k int) float64 {
	kf := float64(k)
	h := 2 / (9 * kf)
	v := 1 - h + stats.NormalQuantile(p)*math.Sqrt(h)
	return kf * v * v * v
}

func round4(v float64) float64 {
	if v == 0 {
		return 0
	}
	mag := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*mag) / mag
}
