// Package envelope derives a baseline performance envelope from repeated
// k6 runs by the baseline method (throughput spread, p95/p99 bands across
// runs, zero errors, per-endpoint bands) and reads and writes the envelope
// file that the rules, the exporter and the reports consume.
package envelope

import (
	"fmt"
	"strings"
	"time"
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

	Provenance Provenance   `json:"provenance" yaml:"provenance"`
	Runs       []RunFigures `json:"runs" yaml:"runs"`

	Throughput           Spread              `json:"throughput" yaml:"throughput"` // http_reqs rate, req/s
	Iterations           Spread              `json:"iterations" yaml:"iterations"` // iterations rate, iter/s
	RequestsPerIteration Spread              `json:"requests_per_iteration" yaml:"requests_per_iteration"`
	Latency              Latency             `json:"latency" yaml:"latency"` // http_req_duration
	Errors               Errors              `json:"errors" yaml:"errors"`
	Endpoints            map[string]Endpoint `json:"endpoints" yaml:"endpoints"`
	Saturation           Saturation          `json:"saturation" yaml:"saturation"`
	ECS                  *ECS                `json:"ecs,omitempty" yaml:"ecs,omitempty"`
	Topology             *Topology           `json:"topology,omitempty" yaml:"topology,omitempty"`
	Tolerance            Tolerance           `json:"tolerance" yaml:"tolerance"`
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
	OldGeneratedAt time.Time `json:"generated_at,omitzero" yaml:"generated_at,omitempty"`
	Sources        []Source  `json:"sources" yaml:"sources"`
	Workload       Workload  `json:"workload" yaml:"workload"`
	SkipWarmup     string    `json:"skip_warmup,omitempty" yaml:"skip_warmup,omitempty"` // Go duration
	GroupBy        string    `json:"group_by,omitempty" yaml:"group_by,omitempty"`
}

// Source is one run file.
type Source struct {
	File      string    `json:"file" yaml:"file"`
	SHA256    string    `json:"sha256" yaml:"sha256"`
	Format    string    `json:"format" yaml:"format"`
	K6Version string    `json:"k6_version,omitempty" yaml:"k6_version,omitempty"`
	Start     time.Time `json:"start,omitzero" yaml:"start,omitempty"`
	End       time.Time `json:"end,omitzero" yaml:"end,omitempty"`
	TestID    string    `json:"testid,omitempty" yaml:"testid,omitempty"`
}

// Workload describes the load shape, where the files or a k6 inspect
// options file tell it.
type Workload struct {
	VUs       int      `json:"vus,omitempty" yaml:"vus,omitempty"`
	Executor  string   `json:"executor,omitempty" yaml:"executor,omitempty"`
	Scenarios []string `json:"scenarios,omitempty" yaml:"scenarios,omitempty"`
	Duration  string   `json:"duration,omitempty" yaml:"duration,omitempty"` // Go duration of one run
}

// RunFigures are one run's headline figures.
type RunFigures struct {
	Source          string  `json:"source" yaml:"source"`
	DurationSeconds float64 `json:"duration_s" yaml:"duration_s"`
	Requests        int64   `json:"requests" yaml:"requests"`
	Iterations      int64   `json:"iterations" yaml:"iterations"`
	RPS             float64 `json:"rps" yaml:"rps"`
	IterationsPerS  float64 `json:"iterations_per_s" yaml:"iterations_per_s"`
	RequestsPerIter float64 `json:"requests_per_iteration" yaml:"requests_per_iteration"`
	Failed          int64   `json:"failed" yaml:"failed"`
	Avg             float64 `json:"avg" yaml:"avg"`
	Median          float64 `json:"median" yaml:"median"`
	P95             float64 `json:"p95" yaml:"p95"`
	P99             float64 `json:"p99" yaml:"p99"`
	Max             float64 `json:"max" yaml:"max"`
	MaxOutlier      bool    `json:"max_outlier" yaml:"max_outlier"` // max above the p99 band
	// P95CI and P99CI are the order-statistic intervals of this run's
	// http_req_duration p95 and p99 at tolerance.confidence: how far
	// sampling alone moves them. Only point files give them.
	P95CI *Interval `json:"p95_ci,omitempty" yaml:"p95_ci,omitempty"`
	P99CI *Interval `json:"p99_ci,omitempty" yaml:"p99_ci,omitempty"`
	// Endpoints holds this run's value of each endpoint statistic, keyed
	// as the envelope's endpoints; absent for endpoints the run lacks.
	Endpoints map[string]RunEndpoint `json:"endpoints,omitempty" yaml:"endpoints,omitempty"`
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

// DisplayName is the endpoint's label, or key when it has none.
func (e Endpoint) DisplayName(key string) string {
	if e.Label != "" {
		return e.Label
	}
	return key
}

// Tolerance is the policy the rules and comparisons apply on top of the
// envelope's own spread.
type Tolerance struct {
	// Relative throughput drop below the band's min allowed before alerting.
	ThroughputDrop float64 `json:"throughput_drop" yaml:"throughput_drop"`
	// Relative latency rise above a band's max allowed before alerting.
	LatencyRise float64 `json:"latency_rise" yaml:"latency_rise"`
	// Error ratio allowed; 0 means any failed request alerts.
	ErrorRatio float64 `json:"error_ratio" yaml:"error_ratio"`
	// Upper bound on the throughput CV over the alert window.
	MaxCV float64 `json:"max_cv,omitempty" yaml:"max_cv,omitempty"`
	// Rate window of the alert expressions (Go/Prometheus duration).
	Window string `json:"window" yaml:"window"`
	// Target false-alarm probability per evaluation for the calibrated bounds.
	FalseAlarm float64 `json:"false_alarm" yaml:"false_alarm"`
	// Confidence for comparisons.
	Confidence float64 `json:"confidence" yaml:"confidence"`
}

// DefaultTolerance is the policy written when none is given.
func DefaultTolerance() Tolerance {
	return Tolerance{
		ThroughputDrop: 0.05,
		LatencyRise:    0.10,
		ErrorRatio:     0,
		Window:         "5m",
		FalseAlarm:     0.001,
		Confidence:     0.95,
	}
}
