package k6

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

type mrMetric struct {
	Name     string                     `json:"name"`
	Type     string                     `json:"type"`
	Contains string                     `json:"contains"`
	Values   map[string]json.RawMessage `json:"values"`
}

// mrStat maps the machine-readable summary's stat keys onto k6's names:
// v2.2.0 writes p90/p95 where the schema says p(90)/p(95).
func mrStat(k string) string {
	if len(k) > 1 && k[0] == 'p' && k[1] != '(' {
		digits := k[1:]
		if strings.Trim(digits, "0123456789") == "" && len(digits) == 2 {
			return "p(" + digits + ")"
		}
	}
	return k
}

func loadMachineReadable(name string, data []byte, d *summaryDoc, run *Run) error {
	if d.Metadata != nil {
		run.K6Version = d.Metadata.K6Version
		if run.K6Version == "" {
			run.K6Version = d.Metadata.K6VersionSnake
		}
	}
	if d.Config != nil && d.Config.Duration != nil {
		run.Duration = time.Duration(math.Round(*d.Config.Duration * 1e9))
	}
	secs := run.Duration.Seconds()
	add := func(mm mrMetric) error {
		line := lineOf(data, mm.Name)
		if mm.Name == "" {
			return fmt.Errorf("%s: a metric in \"results.metrics\" has no field \"name\"", name)
		}
		t, c, err := typeAndContains(mm.Type, mm.Contains)
		if err != nil {
			return fmt.Errorf("%s:%d: metric %q: %v", name, line, mm.Name, err)
		}
		m := newMetric(mm.Name, t, c, ModeSummary)
		for k, v := range mm.Values {
			f, err := number(v)
			if err != nil {
				return fmt.Errorf("%s:%d: metric %q field \"values.%s\": %v", name, line, mm.Name, k, err)
			}
			m.Values[mrStat(k)] = f
		}
		switch t {
		case Rate:
			// matches = non-zero samples, total = all samples.
			m.Values["passes"] = m.Values["matches"]
			m.Values["fails"] = m.Values["total"] - m.Values["matches"]
			delete(m.Values, "matches")
			delete(m.Values, "total")
		case Counter:
			if _, ok := m.Values["rate"]; !ok && secs > 0 {
				m.Values["rate"] = m.Values["count"] / secs
			}
		}
		run.Metrics[mm.Name] = m
		return nil
	}
	for _, mm := range d.Results.Metrics {
		if err := add(mm); err != nil {
			return err
		}
	}
	if ch := d.Results.Checks; ch != nil {
		for _, r := range ch.Results {
			addCheck(run, Check{Name: r.Name, Passes: r.Passes, Fails: r.Fails})
		}
		// checks_succeeded is the legacy "checks" rate under another name.
		for _, mm := range ch.Metrics {
			if mm.Name != "checks_succeeded" {
				continue
			}
			mm.Name = "checks"
			if err := add(mm); err != nil {
				return err
			}
		}
	}
	return nil
}
