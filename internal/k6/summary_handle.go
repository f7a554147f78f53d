package k6

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

type hsGroup struct {
	Name   string           `json:"name"`
	Path   string           `json:"path"`
	Groups []hsGroup        `json:"groups"`
	Checks []exportCheckObj `json:"checks"`
}

type hsMetric struct {
	Type       string                     `json:"type"`
	Contains   string                     `json:"contains"`
	Values     map[string]json.RawMessage `json:"values"`
	Thresholds map[string]struct {
		OK *bool `json:"ok"`
	} `json:"thresholds"`
}

func loadHandleSummary(name string, data []byte, d *summaryDoc, run *Run) error {
	var ms map[string]hsMetric
	if err := json.Unmarshal(d.Metrics, &ms); err != nil {
		return fmt.Errorf("%s:%d: field \"metrics\": %v", name, lineOf(data, "metrics"), err)
	}
	for mname, hm := range ms {
		line := lineOf(data, mname)
		t, c, err := typeAndContains(hm.Type, hm.Contains)
		if err != nil {
			return fmt.Errorf("%s:%d: metric %q: %v", name, line, mname, err)
		}
		m := newMetric(mname, t, c, ModeSummary)
		for k, v := range hm.Values {
			f, err := number(v)
			if err != nil {
				return fmt.Errorf("%s:%d: metric %q field \"values.%s\": %v", name, line, mname, k, err)
			}
			m.Values[k] = f
		}
		for expr, th := range hm.Thresholds {
			if th.OK == nil {
				return fmt.Errorf("%s:%d: metric %q threshold %q: missing \"ok\"", name, line, mname, expr)
			}
			if m.Thresholds == nil {
				m.Thresholds = map[string]bool{}
			}
			m.Thresholds[expr] = *th.OK
		}
		run.Metrics[mname] = m
	}
	if d.RootGroup != nil {
		var g hsGroup
		if err := json.Unmarshal(d.RootGroup, &g); err != nil {
			return fmt.Errorf("%s:%d: field \"root_group\": %v", name, lineOf(data, "root_group"), err)
		}
		var walk func(g hsGroup)
		walk = func(g hsGroup) {
			for _, c := range g.Checks {
				addCheck(run, Check(c))
			}
			for _, sub := range g.Groups {
				walk(sub)
			}
		}
		walk(g)
	}
	if d.State != nil && d.State.TestRunDurationMs != nil {
		run.Duration = time.Duration(math.Round(*d.State.TestRunDurationMs * 1e6))
	} else {
		run.Duration = derivedDuration(run.Metrics)
	}
	return nil
}
