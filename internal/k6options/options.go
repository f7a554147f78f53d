// Package k6options reads a test's load shape: the resolved options that
// `k6 inspect script.js` prints (scenarios, executors, stages) or a short
// stage list such as "5m:1,5m:10,5m:50", and turns stages into time
// windows with their from/to targets, which no k6 result file carries.
package k6options

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options is the part of a `k6 inspect` output that shapes the load.
type Options struct {
	Source    string
	Scenarios []Scenario // sorted by start time, then name
	// Order is the scenario names in the order the file lists them (k6
	// inspect prints them sorted by name).
	Order []string
}

// Scenario is one k6 scenario with the fields the executors use.
type Scenario struct {
	Name            string
	Executor        string
	StartTime       time.Duration
	GracefulStop    time.Duration // k6 default 30s when unset
	Exec            string
	Tags            map[string]string
	StartRate       float64       // arrival-rate executors: iterations per TimeUnit
	TimeUnit        time.Duration // default 1s
	StartVUs        int           // ramping-vus: default 1
	Stages          []Stage
	Rate            float64 // constant-arrival-rate
	VUs             int     // constant-vus, per-vu/shared-iterations
	Duration        time.Duration
	Iterations      int
	PreAllocatedVUs int
	MaxVUs          int
}

// Stage is one ramp step: reach Target over Duration.
type Stage struct {
	Duration time.Duration
	Target   float64
}

// Window is one stage as a time window from the test start with the
// target at its start (From) and end (To). Rates are per second for
// arrival-rate executors; VU counts for VU executors.
type Window struct {
	Stage      int // 1-based
	Start, End time.Duration
	From, To   float64
	Unit       string // "rps" (iterations/s) or "VUs"
}

// Duration is the window's length.
func (w Window) Duration() time.Duration { return w.End - w.Start }

// Arrival reports whether the executor drives iterations per time unit.
func (s Scenario) Arrival() bool {
	return s.Executor == "ramping-arrival-rate" || s.Executor == "constant-arrival-rate"
}

// Windows turns the scenario's schedule into windows from the test start
// (the scenario's StartTime shifts them). Arrival-rate targets are
// converted to iterations per second. Executors without stages give one
// window over their duration.
func (s Scenario) Windows() []Window {
	unit := "VUs"
	per := 1.0
	if s.Arrival() {
		unit = "rps"
		tu := s.TimeUnit
		if tu <= 0 {
			tu = time.Second
		}
		per = 1 / tu.Seconds()
	}
	var out []Window
	switch s.Executor {
	case "ramping-arrival-rate", "ramping-vus":
		from := s.StartRate * per
		if s.Executor == "ramping-vus" {
			from = float64(s.StartVUs)
		}
		at := s.StartTime
		for i, st := range s.Stages {
			to := st.Target * per
			out = append(out, Window{Stage: i + 1, Start: at, End: at + st.Duration, From: from, To: to, Unit: unit})
			at += st.Duration
			from = to
		}
	case "constant-arrival-rate":
		r := s.Rate * per
		out = append(out, Window{Stage: 1, Start: s.StartTime, End: s.StartTime + s.Duration, From: r, To: r, Unit: unit})
	case "constant-vus":
		v := float64(s.VUs)
		out = append(out, Window{Stage: 1, Start: s.StartTime, End: s.StartTime + s.Duration, From: v, To: v, Unit: unit})
	}
	return out
}

// ScheduledDuration is the end of the last window from the test start.
func (s Scenario) ScheduledDuration() time.Duration {
	w := s.Windows()
	if len(w) == 0 {
		return s.StartTime + s.Duration
	}
	return w[len(w)-1].End
}

// Scenario returns the named scenario, or when name is "" the only
// scenario with stages (or the only scenario). The error lists the
// scenarios to choose from.
func (o *Options) Scenario(name string) (*Scenario, error) {
	names := make([]string, len(o.Scenarios))
	for i := range o.Scenarios {
		names[i] = o.Scenarios[i].Name
		if name != "" && o.Scenarios[i].Name == name {
			return &o.Scenarios[i], nil
		}
	}
	if name != "" {
		return nil, fmt.Errorf("%s: no scenario %q (scenarios: %s)", o.Source, name, strings.Join(names, ", "))
	}
	if len(o.Scenarios) == 1 {
		return &o.Scenarios[0], nil
	}
	var staged []*Scenario
	for i := range o.Scenarios {
		if len(o.Scenarios[i].Stages) > 0 {
			staged = append(staged, &o.Scenarios[i])
		}
	}
	if len(staged) == 1 {
		return staged[0], nil
	}
	return nil, fmt.Errorf("%s: %d scenarios (%s); name the one whose stages define the windows with --scenario", o.Source, len(o.Scenarios), strings.Join(names, ", "))
}

// Load reads a `k6 inspect` JSON file.
func Load(path string) (*Options, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, bytes.NewReader(b))
}

// inspect mirrors the fields of `k6 inspect` output this package reads.
type inspect struct {
	rawScenarios json.RawMessage
	VUs          *int                       `json:"vus"`
	Duration     json.RawMessage            `json:"duration"`
	Stages       []rawStage                 `json:"stages"`
	Scenarios    map[string]json.RawMessage `json:"scenarios"`
}

type rawStage struct {
	Duration json.RawMessage `json:"duration"`
	Target   *float64        `json:"target"`
}

type rawScenario struct {
	Executor        string            `json:"executor"`
	StartTime       json.RawMessage   `json:"startTime"`
	GracefulStop    json.RawMessage   `json:"gracefulStop"`
	Exec            *string           `json:"exec"`
	Tags            map[string]string `json:"tags"`
	StartRate       *float64          `json:"startRate"`
	TimeUnit        json.RawMessage   `json:"timeUnit"`
	StartVUs        *int              `json:"startVUs"`
	Stages          []rawStage        `json:"stages"`
	Rate            *float64          `json:"rate"`
	VUs             *int              `json:"vus"`
	Duration        json.RawMessage   `json:"duration"`
	Iterations      *int              `json:"iterations"`
	PreAllocatedVUs *int              `json:"preAllocatedVUs"`
	MaxVUs          *int              `json:"maxVUs"`
}

// Parse reads `k6 inspect` JSON from r; name is used in errors. Like k6,
// top-level stages become a ramping-vus scenario "default", and
// top-level vus+duration a constant-vus one.
func Parse(name string, r io.Reader) (*Options, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var in inspect
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("%s: not k6 inspect JSON: %w", name, err)
	}
	// A second decode of the same value keeps the scenarios' written order.
	var order struct {
		Scenarios json.RawMessage `json:"scenarios"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&order); err == nil {
		in.rawScenarios = order.Scenarios
	}
	o := &Options{Source: name}
	o.Order = scenarioOrder(in.rawScenarios)
	for sn, raw := range in.Scenarios {
		var rs rawScenario
		if err := json.Unmarshal(raw, &rs); err != nil {
			return nil, fmt.Errorf("%s: scenarios.%s: %w", name, sn, err)
		}
		sc, err := rs.scenario(name, sn)
		if err != nil {
			return nil, err
		}
		o.Scenarios = append(o.Scenarios, sc)
	}
	if len(o.Scenarios) == 0 {
		switch {
		case len(in.Stages) > 0:
			sc := Scenario{Name: "default", Executor: "ramping-vus", StartVUs: 1, GracefulStop: 30 * time.Second}
			if in.VUs != nil {
				sc.StartVUs = *in.VUs
			}
			for i, st := range in.Stages {
				s, err := st.stage(fmt.Sprintf("%s: stages[%d]", name, i))
				if err != nil {
					return nil, err
				}
				sc.Stages = append(sc.Stages, s)
			}
			o.Scenarios = append(o.Scenarios, sc)
		case in.VUs != nil && len(in.Duration) > 0 && string(in.Duration) != "null":
			d, err := parseDuration(in.Duration)
			if err != nil {
				return nil, fmt.Errorf("%s: duration: %w", name, err)
			}
			o.Scenarios = append(o.Scenarios, Scenario{Name: "default", Executor: "constant-vus", VUs: *in.VUs, Duration: d, GracefulStop: 30 * time.Second})
		default:
			return nil, fmt.Errorf("%s: no scenarios, stages or vus+duration: nothing describes the load shape", name)
		}
	}
	sort.Slice(o.Scenarios, func(i, j int) bool {
		a, b := o.Scenarios[i], o.Scenarios[j]
		if a.StartTime != b.StartTime {
			return a.StartTime < b.StartTime
		}
		return a.Name < b.Name
	})
	return o, nil
}

func (rs rawScenario) scenario(file, name string) (Scenario, error) {
	where := func(f string) string { return fmt.Sprintf("%s: scenarios.%s.%s", file, name, f) }
	sc := Scenario{Name: name, Executor: rs.Executor, Tags: rs.Tags, TimeUnit: time.Second, GracefulStop: 30 * time.Second, StartVUs: 1}
	if rs.Executor == "" {
		return sc, fmt.Errorf("%s: missing", where("executor"))
	}
	var err error
	for _, d := range []struct {
		field string
		raw   json.RawMessage
		dst   *time.Duration
	}{
		{"startTime", rs.StartTime, &sc.StartTime},
		{"gracefulStop", rs.GracefulStop, &sc.GracefulStop},
		{"timeUnit", rs.TimeUnit, &sc.TimeUnit},
		{"duration", rs.Duration, &sc.Duration},
	} {
		if len(d.raw) == 0 || string(d.raw) == "null" {
			continue
		}
		if *d.dst, err = parseDuration(d.raw); err != nil {
			return sc, fmt.Errorf("%s: %w", where(d.field), err)
		}
	}
	if rs.Exec != nil {
		sc.Exec = *rs.Exec
	}
	setF := func(p *float64, dst *float64) {
		if p != nil {
			*dst = *p
		}
	}
	setI := func(p *int, dst *int) {
		if p != nil {
			*dst = *p
		}
	}
	setF(rs.StartRate, &sc.StartRate)
	setF(rs.Rate, &sc.Rate)
	setI(rs.StartVUs, &sc.StartVUs)
	setI(rs.VUs, &sc.VUs)
	setI(rs.Iterations, &sc.Iterations)
	setI(rs.PreAllocatedVUs, &sc.PreAllocatedVUs)
	setI(rs.MaxVUs, &sc.MaxVUs)
	for i, st := range rs.Stages {
		s, err := st.stage(where(fmt.Sprintf("stages[%d]", i)))
		if err != nil {
			return sc, err
		}
		sc.Stages = append(sc.Stages, s)
	}
	if (sc.Executor == "ramping-arrival-rate" || sc.Executor == "ramping-vus") && len(sc.Stages) == 0 {
		return sc, fmt.Errorf("%s: executor %s needs stages", where("stages"), sc.Executor)
	}
	if sc.TimeUnit <= 0 {
		return sc, fmt.Errorf("%s: must be positive", where("timeUnit"))
	}
	return sc, nil
}

func (st rawStage) stage(where string) (Stage, error) {
	if st.Target == nil {
		return Stage{}, fmt.Errorf("%s.target: missing", where)
	}
	if *st.Target < 0 {
		return Stage{}, fmt.Errorf("%s.target: %v is negative", where, *st.Target)
	}
	d, err := parseDuration(st.Duration)
	if err != nil {
		return Stage{}, fmt.Errorf("%s.duration: %w", where, err)
	}
	return Stage{Duration: d, Target: *st.Target}, nil
}

// parseDuration reads a k6 duration: a Go-style string ("5m", "1m30s")
// or a bare number of milliseconds.
func parseDuration(raw json.RawMessage) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return ParseDuration(s)
	}
	var ms float64
	if err := json.Unmarshal(raw, &ms); err != nil {
		return 0, fmt.Errorf("%s is neither a duration string nor milliseconds", raw)
	}
	if ms < 0 {
		return 0, fmt.Errorf("%v ms is negative", ms)
	}
	if ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		return 0, fmt.Errorf("%v ms is out of range", ms)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// ParseDuration reads a k6 duration string: Go syntax ("5m", "1m30s",
// "500ms") or, as k6 reads it, a bare number of milliseconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if ms, err := strconv.ParseFloat(s, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		// NaN, Inf or beyond ~292 years would wrap to a negative Duration.
		if !(ms <= float64(math.MaxInt64/int64(time.Millisecond))) {
			return 0, fmt.Errorf("duration %q is out of range", s)
		}
		return time.Duration(ms * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want e.g. 30s, 5m, 1m30s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// ParseStages reads a stage list "DURATION:TARGET,..." such as
// "5m:1,5m:10,5m:50" into a ramping-arrival-rate scenario starting at
// rate 0 with a 1s time unit (k6's defaults), or into ramping-vus when
// executor says so.
func ParseStages(spec, executor string) (*Scenario, error) {
	if executor == "" {
		executor = "ramping-arrival-rate"
	}
	if executor != "ramping-arrival-rate" && executor != "ramping-vus" {
		return nil, fmt.Errorf("--stages: executor %q has no stages (want ramping-arrival-rate or ramping-vus)", executor)
	}
	sc := &Scenario{Name: "default", Executor: executor, TimeUnit: time.Second, GracefulStop: 30 * time.Second}
	for i, part := range strings.Split(spec, ",") {
		d, t, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("--stages: stage %d %q: want DURATION:TARGET, e.g. 5m:10", i+1, part)
		}
		dur, err := ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("--stages: stage %d: %w", i+1, err)
		}
		if dur == 0 {
			return nil, fmt.Errorf("--stages: stage %d: zero duration", i+1)
		}
		target, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil || !(target >= 0) || math.IsInf(target, 0) {
			return nil, fmt.Errorf("--stages: stage %d: target %q is not a non-negative number", i+1, t)
		}
		sc.Stages = append(sc.Stages, Stage{Duration: dur, Target: target})
	}
	return sc, nil
}

// scenarioOrder lists the keys of a JSON object in the order written; nil
// when raw is not an object.
func scenarioOrder(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, ok := t.(string)
		if !ok {
			return keys
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

// Staged is the set of scenarios whose stages window a stage report.
type Staged struct {
	// Scenarios by start time, then in the file's order.
	Scenarios []*Scenario
	// Shared is true when every scenario has the same windows (say one
	// scenario per endpoint, all with the same ramp, run in parallel):
	// one set of windows serves all. Otherwise each sample is windowed
	// by its own scenario's stages.
	Shared bool
	// Filtered is true when name picked one scenario of several.
	Filtered bool
}

// Windows returns the windows of the set when Shared, else nil.
func (s *Staged) Windows() []Window {
	if !s.Shared || len(s.Scenarios) == 0 {
		return nil
	}
	return s.Scenarios[0].Windows()
}

// Stages picks the scenarios whose stages define a stage report's
// windows. A name keeps only that scenario. Without one, every scenario
// with stages is used (or, when none has stages, every scenario with a
// schedule), in the file's order.
func (o *Options) Stages(name string) (*Staged, error) {
	byName := map[string]*Scenario{}
	for i := range o.Scenarios {
		byName[o.Scenarios[i].Name] = &o.Scenarios[i]
	}
	order := o.Order
	if len(order) != len(o.Scenarios) {
		order = order[:0:0]
		for _, sc := range o.Scenarios {
			order = append(order, sc.Name)
		}
	}
	if name != "" {
		sc := byName[name]
		if sc == nil {
			return nil, fmt.Errorf("%s: --scenario %q: no such scenario (scenarios: %s)", o.Source, name, strings.Join(order, ", "))
		}
		if len(sc.Windows()) == 0 {
			return nil, fmt.Errorf("%s: --scenario %q: executor %s has no stage windows", o.Source, name, sc.Executor)
		}
		return &Staged{Scenarios: []*Scenario{sc}, Shared: true, Filtered: len(o.Scenarios) > 1}, nil
	}
	st := &Staged{}
	for _, n := range order {
		if sc := byName[n]; sc != nil && len(sc.Stages) > 0 {
			st.Scenarios = append(st.Scenarios, sc)
		}
	}
	if len(st.Scenarios) == 0 {
		for _, n := range order {
			if sc := byName[n]; sc != nil && len(sc.Windows()) > 0 {
				st.Scenarios = append(st.Scenarios, sc)
			}
		}
	}
	if len(st.Scenarios) == 0 {
		return nil, fmt.Errorf("%s: no scenario has a schedule of stage windows (scenarios: %s)", o.Source, strings.Join(order, ", "))
	}
	// Sequential scenarios run in start order; parallel ones keep the
	// file's order.
	sort.SliceStable(st.Scenarios, func(i, j int) bool { return st.Scenarios[i].StartTime < st.Scenarios[j].StartTime })
	st.Filtered = len(st.Scenarios) < len(o.Scenarios)
	st.Shared = true
	ref := st.Scenarios[0].Windows()
	for _, sc := range st.Scenarios[1:] {
		if !sameWindows(ref, sc.Windows()) {
			st.Shared = false
		}
	}
	return st, nil
}

func sameWindows(a, b []Window) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
