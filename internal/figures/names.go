// Package figures is the model of what a k6 run measured, which every
// command reads: each figure's name, unit and polarity, its
// "endpoint.figure" key, how it is read from every format k6 writes, the
// defaults every judge shares, and Run, one run's figures with their
// sample counts and intervals, its duration, workload and provenance.
package figures

import (
	"fmt"
	"slices"
	"strings"
)

// Name names a figure of a run. The names are those of the envelope
// file's per-run values and of a run history's series.
type Name string

// The figures of a run: the headline figures, then the latency figures
// the aggregate (http_req_duration) and every endpoint have.
const (
	RPS             Name = "rps"                    // http_reqs rate
	IterationsPerS  Name = "iterations_per_s"       // iterations rate
	RequestsPerIter Name = "requests_per_iteration" // http_reqs count ÷ iterations count
	ErrorRate       Name = "error_rate"             // share of failed requests (http_req_failed)
	Avg             Name = "avg"
	Median          Name = "median"
	P95             Name = "p95"
	P99             Name = "p99"
	Max             Name = "max"
)

// Polarity says which way a figure gets worse.
type Polarity int

const (
	// HigherIsWorse: latency, the error rate and requests per iteration.
	HigherIsWorse Polarity = iota
	// LowerIsWorse: the rates.
	LowerIsWorse
)

// Better is "higher" or "lower": the direction in which the figure
// improves.
func (p Polarity) Better() string {
	if p == LowerIsWorse {
		return "higher"
	}
	return "lower"
}

// Def is what is known of a figure.
type Def struct {
	Name Name
	// Unit is the figure's unit: req/s, iter/s, req/iter, ratio or ms.
	Unit     string
	Polarity Polarity
	// Label names the figure for people: "throughput", "error rate", "p95".
	Label string
	// Stat is the k6 trend statistic a latency figure is read from
	// ("med", "p(95)"); empty for the others.
	Stat string
	// Quantile is a percentile figure's probability (0.5, 0.95, 0.99);
	// 0 for the others.
	Quantile float64
	// Latency says the figure is a latency statistic, which the
	// aggregate and every endpoint have.
	Latency bool
	// Rate says the figure is a count over the run's span: its own
	// sampling error is the count's (Value.LogVar).
	Rate bool
}

// defs are every figure, headline figures first: the one list.
var defs = [...]Def{
	{Name: RPS, Unit: "req/s", Polarity: LowerIsWorse, Label: "throughput", Rate: true},
	{Name: IterationsPerS, Unit: "iter/s", Polarity: LowerIsWorse, Label: "iteration rate", Rate: true},
	{Name: RequestsPerIter, Unit: "req/iter", Polarity: HigherIsWorse, Label: "requests per iteration"},
	{Name: ErrorRate, Unit: "ratio", Polarity: HigherIsWorse, Label: "error rate"},
	{Name: Avg, Unit: "ms", Polarity: HigherIsWorse, Label: "avg", Stat: "avg", Latency: true},
	{Name: Median, Unit: "ms", Polarity: HigherIsWorse, Label: "median", Stat: "med", Quantile: 0.5, Latency: true},
	{Name: P95, Unit: "ms", Polarity: HigherIsWorse, Label: "p95", Stat: "p(95)", Quantile: 0.95, Latency: true},
	{Name: P99, Unit: "ms", Polarity: HigherIsWorse, Label: "p99", Stat: "p(99)", Quantile: 0.99, Latency: true},
	{Name: Max, Unit: "ms", Polarity: HigherIsWorse, Label: "max", Stat: "max", Latency: true},
}

// All are every figure's definition, headline figures first; a fresh
// slice each call.
func All() []Def { return slices.Clone(defs[:]) }

// Names are every figure's name in All's order.
func Names() []Name {
	out := make([]Name, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

// LatencyNames are the latency figures, in All's order.
func LatencyNames() []Name { return []Name{Avg, Median, P95, P99, Max} }

// Percentiles are the percentile figures a run estimates with an
// interval, in All's order.
func Percentiles() []Name { return []Name{Median, P95, P99} }

// Lookup finds a figure's definition.
func Lookup(n Name) (Def, bool) {
	for _, d := range defs {
		if d.Name == n {
			return d, true
		}
	}
	return Def{}, false
}

// Def is the figure's definition; the zero Def for an unknown name.
func (n Name) Def() Def {
	d, _ := Lookup(n)
	return d
}

// Key names one figure of a run: the aggregate's (Endpoint empty) or an
// endpoint's.
type Key struct {
	Endpoint string `json:"endpoint"`
	Figure   Name   `json:"figure"`
}

// String is the key as every command writes and takes it,
// "endpoint.figure", or the figure alone for the aggregate.
func (k Key) String() string {
	if k.Endpoint == "" {
		return string(k.Figure)
	}
	return k.Endpoint + "." + string(k.Figure)
}

// Label names the figure for people: "aggregate p95", "auth_login p95",
// or with the endpoint's display name when one is given.
func (k Key) Label(display string) string {
	what := k.Figure.Def().Label
	switch {
	case display != "":
		return display + " " + what
	case k.Endpoint != "":
		return k.Endpoint + " " + what
	}
	return "aggregate " + what
}

// ParseKey reads a key as String writes it: "p95" or "auth_login.p95".
// An endpoint has only the latency figures.
func ParseKey(s string) (Key, error) {
	k := Key{Figure: Name(s)}
	if i := strings.LastIndex(s, "."); i >= 0 {
		k = Key{Endpoint: s[:i], Figure: Name(s[i+1:])}
		if i == 0 {
			return Key{}, fmt.Errorf("figure %q: empty endpoint name", s)
		}
	}
	d, ok := Lookup(k.Figure)
	if !ok {
		names := make([]string, len(defs))
		for i, d := range defs {
			names[i] = string(d.Name)
		}
		return Key{}, fmt.Errorf("figure %q: want one of %s, prefixed with an endpoint for an endpoint's (auth_login.p95)", s, strings.Join(names, ", "))
	}
	if k.Endpoint != "" && !d.Latency {
		return Key{}, fmt.Errorf("figure %q: an endpoint has only avg, median, p95, p99 and max", s)
	}
	return k, nil
}

// EndpointSource is where an endpoint's samples come from, read from its
// key: "tag=value" is the http_req_duration samples carrying that tag
// value (a sub-metric or a --group-by value), any other key a custom
// trend of that name (k6 metric names cannot hold '=').
func EndpointSource(key string) (metric, tag, value string) {
	if t, v, ok := strings.Cut(key, "="); ok {
		return "", t, v
	}
	return key, "", ""
}

// EndpointKey is the key of the endpoint of a tag value.
func EndpointKey(tag, value string) string { return tag + "=" + value }
