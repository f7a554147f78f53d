package k6

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// summaryDoc is the union of the three summary JSON shapes; fields that a
// shape lacks stay nil. Values are decoded as raw JSON so a wrong type can
// be reported by metric and field.
type summaryDoc struct {
	// Legacy shapes.
	Metrics   json.RawMessage `json:"metrics"`
	RootGroup json.RawMessage `json:"root_group"`
	Options   *struct {
		SummaryTrendStats []string `json:"summaryTrendStats"`
	} `json:"options"`
	State *struct {
		TestRunDurationMs *float64 `json:"testRunDurationMs"`
	} `json:"state"`

	// Machine-readable summary v1.0.0.
	Version  string `json:"version"`
	Metadata *struct {
		K6Version      string `json:"k6Version"`
		K6VersionSnake string `json:"k6_version"`
	} `json:"metadata"`
	Config *struct {
		Duration *float64 `json:"duration"`
	} `json:"config"`
	Results *struct {
		Metrics []mrMetric `json:"metrics"`
		Checks  *struct {
			Metrics []mrMetric `json:"metrics"`
			Results []struct {
				Name   string `json:"name"`
				Passes int64  `json:"passes"`
				Fails  int64  `json:"fails"`
			} `json:"results"`
		} `json:"checks"`
	} `json:"results"`
}

type mrMetric struct {
	Name     string                     `json:"name"`
	Type     string                     `json:"type"`
	Contains string                     `json:"contains"`
	Values   map[string]json.RawMessage `json:"values"`
}

// detectSummary tells the summary shape of a decoded document.
func detectSummary(d *summaryDoc) (Format, bool) {
	switch {
	case d.Results != nil && (d.Version != "" || d.Config != nil):
		return FormatMachineReadable, true
	case d.Metrics == nil:
		return "", false
	case d.State != nil || d.Options != nil:
		return FormatHandleSummary, true
	}
	// Without options/state, a handleSummary object still has typed
	// metrics ({"type":…,"values":…}); summary-export has flat values.
	var ms map[string]map[string]json.RawMessage
	if json.Unmarshal(d.Metrics, &ms) == nil {
		for _, m := range ms {
			if _, ok := m["values"]; ok {
				return FormatHandleSummary, true
			}
		}
	}
	return FormatSummaryExport, true
}

// loadSummary parses any of the three summary JSON shapes.
func loadSummary(name string, data []byte, want Format) (*Run, error) {
	var d summaryDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		return nil, jsonError(name, data, err)
	}
	// The decoder stops after the first value; anything but white space
	// after it means a damaged or concatenated file.
	end := dec.InputOffset()
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("%s:%d: invalid JSON: data after the end of the document", name, lineAt(data, int64(len(data)-len(rest))))
	}
	f, ok := detectSummary(&d)
	if !ok {
		return nil, fmt.Errorf("%s:1: not k6 output: a JSON object without \"metrics\" or \"results\"", name)
	}
	if want != "" && want != f {
		return nil, fmt.Errorf("%s: asked for format %s but the content is %s", name, want, f)
	}
	run := &Run{Source: name, Format: f, Mode: ModeSummary, Metrics: map[string]*Metric{}, Checks: map[string]Check{}}
	var err error
	switch f {
	case FormatSummaryExport:
		err = loadSummaryExport(name, data, &d, run)
	case FormatHandleSummary:
		err = loadHandleSummary(name, data, &d, run)
	case FormatMachineReadable:
		err = loadMachineReadable(name, data, &d, run)
	}
	if err != nil {
		return nil, err
	}
	return run, nil
}

// jsonError turns a decoder error into file:line: message.
func jsonError(name string, data []byte, err error) error {
	var off int64 = -1
	switch e := err.(type) {
	case *json.SyntaxError:
		// Offset counts the offending byte: when that byte is a newline
		// (an unterminated string), counting it would name the next line.
		off = max(e.Offset-1, 0)
	case *json.UnmarshalTypeError:
		off = e.Offset
		return fmt.Errorf("%s:%d: field %q: got JSON %s, want %s", name, lineAt(data, off), e.Field, e.Value, e.Type)
	}
	if off >= 0 {
		return fmt.Errorf("%s:%d: invalid JSON: %v", name, lineAt(data, off), err)
	}
	if err.Error() == "EOF" || err.Error() == "unexpected EOF" {
		// The last line with content is where the document stops; trailing
		// newlines and blank lines after it are not the problem.
		content := bytes.TrimRight(data, " \t\r\n")
		return fmt.Errorf("%s:%d: truncated JSON", name, lineAt(data, int64(len(content))))
	}
	return fmt.Errorf("%s: invalid JSON: %v", name, err)
}

func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// lineOf finds the line of the first occurrence of a quoted key, for
// errors about a field that decoded fine as JSON but is semantically bad.
func lineOf(data []byte, key string) int {
	i := bytes.Index(data, []byte(`"`+key+`"`))
	if i < 0 {
		return 1
	}
	return lineAt(data, int64(i))
}

func number(raw json.RawMessage) (float64, error) {
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("not a number: %s", truncate(string(raw), 40))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a finite number")
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func newMetric(name string, t MetricType, c ValueType, mode Mode) *Metric {
	parent, tags := SplitName(name)
	return &Metric{Name: name, Parent: parent, Tags: tags, Type: t, Contains: c, Values: map[string]float64{}, Mode: mode}
}

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
			addCheck(run, Check{Name: c.Name, Path: c.Path, Passes: c.Passes, Fails: c.Fails})
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
				addCheck(run, Check{Name: c.Name, Path: c.Path, Passes: c.Passes, Fails: c.Fails})
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

func typeAndContains(t, c string) (MetricType, ValueType, error) {
	mt := MetricType(t)
	switch mt {
	case Counter, Gauge, Rate, Trend:
	default:
		return "", "", errf("type", "unknown metric type %q", truncate(t, 40))
	}
	vt := ValueType(c)
	switch vt {
	case Default, Time, Data:
	case "":
		vt = Default
	default:
		return "", "", errf("contains", "unknown value type %q", truncate(c, 40))
	}
	return mt, vt, nil
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

// sortedNames returns map keys in order, for stable output.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
