package k6

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
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

// sortedNames returns map keys in order, for stable output.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
