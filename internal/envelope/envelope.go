// Package envelope derives a baseline performance envelope from repeated
// k6 runs by the baseline method (throughput spread, p95/p99 bands across
// runs, zero errors, per-endpoint bands) and reads and writes the envelope
// file that the rules, the exporter and the reports consume.
package envelope

import (
	"fmt"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
)

// APIVersion and Kind identify an envelope file.
const (
	APIVersion = "envelope.dev/v1"
	Kind       = "Envelope"
)

// Envelope is a baseline envelope. Latency figures are milliseconds,
// rates per second, ratios in [0,1].
type Envelope struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	Name       string `json:"name" yaml:"name"`
	// Match selects the k6 series of the tests this envelope judges:
	// PromQL label matchers without braces on k6 tags, e.g.
	// `envelope="checkout-native-50vu"` or
	// `scenario="baseline_mix", testid=~"nightly-.*"`. Empty judges every
	// k6 test. Every generated rule selects with it.
	Match string `json:"match,omitempty" yaml:"match,omitempty"`

	Provenance Provenance `json:"provenance" yaml:"provenance"`
	Runs       []Run      `json:"runs" yaml:"runs"`

	Throughput           Spread              `json:"throughput" yaml:"throughput"` // http_reqs rate, req/s
	Iterations           Spread              `json:"iterations" yaml:"iterations"` // iterations rate, iter/s
	RequestsPerIteration Spread              `json:"requests_per_iteration" yaml:"requests_per_iteration"`
	Latency              Latency             `json:"latency" yaml:"latency"` // http_req_duration
	Errors               Errors              `json:"errors" yaml:"errors"`
	Endpoints            map[string]Endpoint `json:"endpoints" yaml:"endpoints"`
	Saturation           Saturation          `json:"saturation" yaml:"saturation"`
	ECS                  *ECS                `json:"ecs,omitempty" yaml:"ecs,omitempty"`
	Topology             *Topology           `json:"topology,omitempty" yaml:"topology,omitempty"`
	Tolerance            figures.Tolerance   `json:"tolerance" yaml:"tolerance"`
	Warnings             []string            `json:"warnings,omitempty" yaml:"warnings,omitempty"`
}

// Provenance says where the envelope came from.
type Provenance struct {
	// RunsEndedAt is when the last run ended, as the sources tell (never
	// the clock, so regenerating is byte-stable); absent when no source
	// carries a time, as summary exports don't. Files written before it
	// had its name call it generated_at, which is still read.
	RunsEndedAt time.Time `json:"runs_ended_at,omitzero" yaml:"runs_ended_at,omitempty"`
	// OldGeneratedAt reads the former name of RunsEndedAt; never written.
	OldGeneratedAt time.Time        `json:"generated_at,omitzero" yaml:"generated_at,omitempty"`
	Sources        []figures.Source `json:"sources" yaml:"sources"`
	Workload       Workload         `json:"workload" yaml:"workload"`
	SkipWarmup     string           `json:"skip_warmup,omitempty" yaml:"skip_warmup,omitempty"` // Go duration
	GroupBy        string           `json:"group_by,omitempty" yaml:"group_by,omitempty"`
}

// Workload describes the load shape, where the files or a k6 inspect
// options file tell it.
type Workload struct {
	VUs       int      `json:"vus,omitempty" yaml:"vus,omitempty"`
	Executor  string   `json:"executor,omitempty" yaml:"executor,omitempty"`
	Scenarios []string `json:"scenarios,omitempty" yaml:"scenarios,omitempty"`
	Duration  string   `json:"duration,omitempty" yaml:"duration,omitempty"` // Go duration of one run
}

// Run is one baseline run's figures as the envelope keeps them.
type Run struct {
	figures.Run `yaml:",inline"`
	// MaxOutlier is true when the run's max, its slowest request, lies
	// more than MaxOutlierFactor times above every other run's max
	// (MaxOutliers).
	MaxOutlier bool `json:"max_outlier" yaml:"max_outlier"`
}

// MaxOutlierFactor is how far above every other run's max a run's max
// must lie to be an outlier. A max is one request, the slowest, so it
// lies above the run's p99 by nature and moves a lot from run to run
// (the real 6-minute baseline runs: 3.0–3.5 s; the ten runs of one
// service setting in the history fixture: 1.7–5.2 s): a max twice as slow
// as any other run's is a request none of them came near, such as a
// timeout or a stall.
const MaxOutlierFactor = 2

// MaxOutliers marks each run whose max lies more than MaxOutlierFactor
// times above the largest max of the other runs; with fewer than 2 runs
// with a max, none is marked.
func MaxOutliers(runs []Run) {
	for i := range runs {
		others, any := 0.0, false
		for j := range runs {
			if j != i && runs[j].Max > 0 {
				others, any = max(others, runs[j].Max), true
			}
		}
		runs[i].MaxOutlier = any && runs[i].Max > MaxOutlierFactor*others
	}
}

// RunFigures are the envelope's baseline runs' figures, in run order.
func (env *Envelope) RunFigures() []figures.Run {
	out := make([]figures.Run, len(env.Runs))
	for i, r := range env.Runs {
		out[i] = r.Run
	}
	return out
}

// Support is what the baseline runs' request counts say of the
// percentiles of an endpoint's trend ("" for http_req_duration): which
// of them every run estimates (figures.Support).
func (env *Envelope) Support(endpoint string) figures.Support {
	return figures.SupportOf(env.RunFigures(), endpoint)
}

// Spread summarizes one value per run: mean, min, max, sample standard
// deviation (n-1), coefficient of variation, and the 95% confidence
// interval of the mean (Student t, n-1 degrees of freedom).
type Spread struct {
	N      int     `json:"n" yaml:"n"`
	Mean   float64 `json:"mean" yaml:"mean"`
	Min    float64 `json:"min" yaml:"min"`
	Max    float64 `json:"max" yaml:"max"`
	StdDev float64 `json:"stddev" yaml:"stddev"`
	CV     float64 `json:"cv" yaml:"cv"`
	CILow  float64 `json:"ci95_low" yaml:"ci95_low"`
	CIHigh float64 `json:"ci95_high" yaml:"ci95_high"`
	// MDC is the minimum detectable relative change of the mean (ratio).
	MDC float64 `json:"mdc" yaml:"mdc"`
}

// Band is the min and max of run-level values; never averaged.
type Band struct {
	Min float64 `json:"min" yaml:"min"`
	Max float64 `json:"max" yaml:"max"`
	// Mean of the per-run values, for medians and averages only.
	Mean float64 `json:"mean,omitempty" yaml:"mean,omitempty"`
	N    int     `json:"n" yaml:"n"`
}

// Latency holds the overall http_req_duration bands (ms).
type Latency struct {
	Avg    Band `json:"avg" yaml:"avg"`
	Median Band `json:"median" yaml:"median"`
	P95    Band `json:"p95" yaml:"p95"`
	P99    Band `json:"p99" yaml:"p99"`
	Max    Band `json:"max" yaml:"max"`
}

// Errors is http_req_failed summed over runs.
type Errors struct {
	Failed int64   `json:"failed" yaml:"failed"`
	Total  int64   `json:"total" yaml:"total"`
	Rate   float64 `json:"rate" yaml:"rate"`
}

// Endpoint holds one endpoint's bands (ms) and where its series come from:
// a custom trend metric (Metric set) or a tag value of http_req_duration
// (Tag and Value set).
type Endpoint struct {
	Metric string `json:"metric,omitempty" yaml:"metric,omitempty"` // custom trend name, e.g. actor_get
	Tag    string `json:"tag,omitempty" yaml:"tag,omitempty"`       // e.g. name
	Value  string `json:"value,omitempty" yaml:"value,omitempty"`   // e.g. "GET /actors/{id}"
	// Label is the display name reports and dashboards show, e.g.
	// "Auth login (Cognito)"; the key when empty.
	Label string `json:"label,omitempty" yaml:"label,omitempty"`

	Avg    Band `json:"avg" yaml:"avg"`
	Median Band `json:"median" yaml:"median"`
	P95    Band `json:"p95" yaml:"p95"`
	P99    Band `json:"p99" yaml:"p99"`
	Max    Band `json:"max" yaml:"max"`
	// Share of all requests this endpoint takes, when known (request mix).
	Share float64 `json:"share,omitempty" yaml:"share,omitempty"`
}

// Saturation is the verdict on whether the runs were below saturation.
type Saturation struct {
	BelowSaturation bool     `json:"below_saturation" yaml:"below_saturation"`
	Verdict         string   `json:"verdict" yaml:"verdict"`
	Reasons         []string `json:"reasons" yaml:"reasons"`
}

// ECS is the operating point's resource utilisation, when ECS series
// covered the baseline runs.
type ECS struct {
	TaskCPUUnits      int  `json:"task_cpu_units,omitempty" yaml:"task_cpu_units,omitempty"`
	TaskMemoryMiB     int  `json:"task_memory_mib,omitempty" yaml:"task_memory_mib,omitempty"`
	Tasks             int  `json:"tasks,omitempty" yaml:"tasks,omitempty"`
	CPUUtilisation    Band `json:"cpu_utilisation" yaml:"cpu_utilisation"`       // ratio of the limit
	MemoryUtilisation Band `json:"memory_utilisation" yaml:"memory_utilisation"` // ratio of the limit
	// CPU seconds per request, for the efficiency alert.
	CPUSecondsPerRequest Band `json:"cpu_seconds_per_request" yaml:"cpu_seconds_per_request"`
}

// Topology is what the baseline ran on, as the user states it when no
// ECS snapshots measured it: the operating point's sentence names it.
type Topology struct {
	Platform        string   `json:"platform,omitempty" yaml:"platform,omitempty"`                   // e.g. ECS, ECS Fargate
	TasksPerService int      `json:"tasks_per_service,omitempty" yaml:"tasks_per_service,omitempty"` // running tasks of each service
	TaskCPUUnits    int      `json:"task_cpu_units,omitempty" yaml:"task_cpu_units,omitempty"`       // 1024 = 1 vCPU
	TaskMemoryMiB   int      `json:"task_memory_mib,omitempty" yaml:"task_memory_mib,omitempty"`
	Runtime         string   `json:"runtime,omitempty" yaml:"runtime,omitempty"`               // e.g. GraalVM native images
	LoadGenerator   string   `json:"load_generator,omitempty" yaml:"load_generator,omitempty"` // e.g. in-VPC EC2
	Notes           []string `json:"notes,omitempty" yaml:"notes,omitempty"`
}

// Phrase is the topology as the operating point's sentence says it:
// "1 ECS task per service, 256 CPU / 512 MiB, GraalVM native images,
// load generator in-VPC EC2".
func (t *Topology) Phrase() string {
	if t == nil {
		return ""
	}
	var parts []string
	platform := t.Platform
	if platform == "" {
		platform = "ECS"
	}
	if t.TasksPerService > 0 {
		word := "tasks"
		if t.TasksPerService == 1 {
			word = "task"
		}
		parts = append(parts, fmt.Sprintf("%d %s %s per service", t.TasksPerService, platform, word))
	} else if t.Platform != "" {
		parts = append(parts, t.Platform)
	}
	switch {
	case t.TaskCPUUnits > 0 && t.TaskMemoryMiB > 0:
		parts = append(parts, fmt.Sprintf("%d CPU / %d MiB", t.TaskCPUUnits, t.TaskMemoryMiB))
	case t.TaskCPUUnits > 0:
		parts = append(parts, fmt.Sprintf("%d CPU", t.TaskCPUUnits))
	case t.TaskMemoryMiB > 0:
		parts = append(parts, fmt.Sprintf("%d MiB", t.TaskMemoryMiB))
	}
	if t.Runtime != "" {
		parts = append(parts, t.Runtime)
	}
	if t.LoadGenerator != "" {
		parts = append(parts, "load generator "+t.LoadGenerator)
	}
	parts = append(parts, t.Notes...)
	return strings.Join(parts, ", ")
}

// Band is the band of a latency figure; the zero Band for another.
func (l Latency) Band(n figures.Name) Band {
	switch n {
	case figures.Avg:
		return l.Avg
	case figures.Median:
		return l.Median
	case figures.P95:
		return l.P95
	case figures.P99:
		return l.P99
	case figures.Max:
		return l.Max
	}
	return Band{}
}

// Spread is the spread of a headline figure across the runs; the zero
// Spread for another.
func (env *Envelope) Spread(n figures.Name) Spread {
	switch n {
	case figures.RPS:
		return env.Throughput
	case figures.IterationsPerS:
		return env.Iterations
	case figures.RequestsPerIter:
		return env.RequestsPerIteration
	}
	return Spread{}
}

// Range is the envelope's range of figure k across its runs: a headline
// figure's spread or a latency figure's band (min and max); ok is false
// when it keeps none (the error rate, an endpoint it lacks).
func (env *Envelope) Range(k figures.Key) (lo, hi float64, ok bool) {
	if !k.Figure.Def().Latency {
		if s := env.Spread(k.Figure); k.Endpoint == "" && s.N > 0 {
			return s.Min, s.Max, true
		}
		return 0, 0, false
	}
	l := env.Latency
	if k.Endpoint != "" {
		e, has := env.Endpoints[k.Endpoint]
		if !has {
			return 0, 0, false
		}
		l = Latency{Avg: e.Avg, Median: e.Median, P95: e.P95, P99: e.P99, Max: e.Max}
	}
	b := l.Band(k.Figure)
	return b.Min, b.Max, b.N > 0
}

// Band is the band of one of the endpoint's latency figures.
func (e Endpoint) Band(n figures.Name) Band {
	return Latency{Avg: e.Avg, Median: e.Median, P95: e.P95, P99: e.P99, Max: e.Max}.Band(n)
}

// DisplayName is the endpoint's label, or key when it has none.
func (e Endpoint) DisplayName(key string) string {
	if e.Label != "" {
		return e.Label
	}
	return key
}
