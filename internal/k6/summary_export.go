package k6

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

func loadSummaryExport(name string, data []byte, d *summaryDoc, run *Run) error {
	var ms map[string]map[string]json.RawMessage
	if err := json.Unmarshal(d.Metrics, &ms); err != nil {
		return fmt.Errorf("%s:%d: field \"metrics\": %v", name, lineOf(data, "metrics"), err)
	}
	for mname, raw := range ms {
		if raw == nil {
			return fmt.Errorf("%s: metric %q: null instead of an object", name, mname)
		}
		values := map[string]float64{}
		thresholds := map[string]bool{}
		for k, v := range raw {
			if k == "thresholds" {
				var th map[string]bool
				if err := json.Unmarshal(v, &th); err != nil {
					return fmt.Errorf("%s:%d: metric %q field \"thresholds\": want {expression: bool}: %v", name, lineOf(data, mname), mname, err)
				}
				for expr, failed := range th {
					thresholds[expr] = !failed // summary-export's true means the threshold failed
				}
				continue
			}
			f, err := number(v)
			if err != nil {
				return fmt.Errorf("%s:%d: metric %q field %q: %v", name, lineOf(data, mname), mname, k, err)
			}
			values[k] = f
		}
		t := inferType(values)
		parent, _ := SplitName(mname)
		c := Default
		if bt, bc, ok := Builtin(parent); ok && bt == t {
			c = bc
		} else if t == Trend {
			// summary-export drops "contains"; custom trends are almost
			// always timings (new Trend(name, true)).
			c = Time
		}
		m := newMetric(mname, t, c, ModeSummary)
		if t == Rate {
			values["rate"] = values["value"]
			delete(values, "value")
		}
		m.Values = values
		if len(thresholds) > 0 {
			m.Thresholds = thresholds
		}
		run.Metrics[mname] = m
	}
	if err := exportChecks(name, data, d.RootGroup, run); err != nil {
		return err
	}
	run.Duration = derivedDuration(run.Metrics)
	return nil
}

// inferType applies the key rules of a summary-export metric: passes →
// rate; count+rate and no trend stat → counter; value+min+max → gauge;
// otherwise trend.
func inferType(v map[string]float64) MetricType {
	has := func(k string) bool { _, ok := v[k]; return ok }
	switch {
	case has("passes") || has("fails"):
		return Rate
	case has("rate") && !has("avg") && !has("med") && !has("min"):
		return Counter
	case has("value") && has("min") && has("max") && !has("avg"):
		return Gauge
	}
	return Trend
}

// derivedDuration recovers the test duration from a counter's count/rate,
// preferring http_reqs, then iterations, then the largest counter (most
// significant digits).
func derivedDuration(ms map[string]*Metric) time.Duration {
	try := func(m *Metric) (time.Duration, bool) {
		if m == nil || m.Type != Counter {
			return 0, false
		}
		c, r := m.Values["count"], m.Values["rate"]
		if c <= 0 || r <= 0 {
			return 0, false
		}
		return time.Duration(math.Round(c / r * 1e9)), true
	}
	for _, n := range []string{"http_reqs", "iterations"} {
		if d, ok := try(ms[n]); ok {
			return d
		}
	}
	var best *Metric
	for _, m := range ms {
		if m.Type == Counter && m.Values["rate"] > 0 && (best == nil || m.Values["count"] > best.Values["count"] ||
			m.Values["count"] == best.Values["count"] && m.Name < best.Name) {
			best = m
		}
	}
	d, _ := try(best)
	return d
}

type exportGroup struct {
	Name   string                    `json:"name"`
	Path   string                    `json:"path"`
	Groups map[string]exportGroup    `json:"groups"`
	Checks map[string]exportCheckObj `json:"checks"`
}

type exportCheckObj struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Passes int64  `json:"passes"`
	Fails  int64  `json:"fails"`
}

func exportChecks(name string, data []byte, raw json.RawMessage, run *Run) error {
	if raw == nil {
		return nil
	}
	var g exportGroup
	if err := json.Unmarshal(raw, &g); err != nil {
		return fmt.Errorf("%s:%d: field \"root_group\": %v", name, lineOf(data, "root_group"), err)
	}
	var walk func(g exportGroup)
	walk = func(g exportGroup) {
		for _, c := range g.Checks {
			addCheck(run, Check(c))
		}
		for _, sub := range g.Groups {
			walk(sub)
		}
	}
	walk(g)
	return nil
}

// addCheck keys checks by name; the same name in several groups is summed
// (the machine-readable summary and point streams only know names), and
// Path is kept only while it is unambiguous.
func addCheck(run *Run, c Check) {
	if old, ok := run.Checks[c.Name]; ok {
		c.Passes += old.Passes
		c.Fails += old.Fails
		if old.Path != c.Path {
			c.Path = ""
		}
	}
	run.Checks[c.Name] = c
}
