package envelope

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/envelope-dev/envelope/internal/figures"
)

// Format is an envelope file encoding.
type Format string

// Encodings.
const (
	YAML Format = "yaml"
	JSON Format = "json"
)

// Marshal encodes env as YAML (two-space indent) or JSON (two-space
// indent). Both are deterministic: map keys are sorted and no clock is read.
func Marshal(env *Envelope, f Format) ([]byte, error) {
	switch f {
	case JSON:
		b, err := json.MarshalIndent(env, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	case YAML, "":
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(env); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return nil, fmt.Errorf("unknown envelope format %q (want yaml or json)", f)
}

// WriteFile writes env to path, creating its folder.
func WriteFile(path string, env *Envelope, f Format) error {
	b, err := Marshal(env, f)
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b, 0o644)
}

// ReadFile reads and validates an envelope file (YAML or JSON).
func ReadFile(path string) (*Envelope, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse decodes an envelope from YAML or JSON (JSON is YAML, but is
// decoded strictly as JSON when it starts with '{') and validates it.
// Errors name the file, the line where known, and the field.
func Parse(name string, b []byte) (env *Envelope, err error) {
	defer func() {
		// A cut file fails somewhere; its cause is the cut.
		if err != nil {
			if terr := truncated(name, b, err); terr != nil {
				env, err = nil, terr
			}
		}
	}()
	env = &Envelope{}
	var root yaml.Node
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(env); err != nil {
			return nil, jsonErr(name, b, err)
		}
	} else {
		if err := yaml.Unmarshal(b, &root); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(root.Content) == 0 {
			return nil, fmt.Errorf("%s: empty envelope file", name)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(env); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if p := &env.Provenance; p.RunsEndedAt.IsZero() {
		p.RunsEndedAt = p.OldGeneratedAt // the field's former name
	}
	env.Provenance.OldGeneratedAt = time.Time{}
	if errs := env.Validate(); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			if line := lineOf(&root, e.Field); line > 0 {
				msgs[i] = fmt.Sprintf("%s:%d: %s", name, line, e)
			} else {
				msgs[i] = fmt.Sprintf("%s: %s", name, e)
			}
		}
		return nil, errors.New(strings.Join(msgs, "\n"))
	}
	return env, nil
}

func jsonErr(name string, b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%s:%d: invalid JSON: %v", name, 1+bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n")), err)
	case errors.As(err, &te):
		return fmt.Errorf("%s:%d: field %s: got JSON %s, want %s", name, 1+bytes.Count(b[:min(int(te.Offset), len(b))], []byte("\n")), te.Field, te.Value, te.Type)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// lineOf finds the line of a dotted field path ("throughput.min",
// "endpoints.actor_get.p95.max", "runs[2].rps") in a YAML document; 0 when
// unknown (JSON input, or the field is absent).
func lineOf(root *yaml.Node, field string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n == nil || n.Kind == 0 {
		return 0
	}
	line := 0
	for _, part := range splitPath(field) {
		found := false
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == part {
					line = n.Content[i].Line
					n = n.Content[i+1]
					found = true
					break
				}
			}
		case yaml.SequenceNode:
			var idx int
			if _, err := fmt.Sscanf(part, "[%d]", &idx); err == nil && idx >= 0 && idx < len(n.Content) {
				n = n.Content[idx]
				line = n.Line
				found = true
			}
		}
		if !found {
			return line
		}
	}
	return line
}

// splitPath splits "runs[2].rps" into "runs", "[2]", "rps". Endpoint
// names may hold dots, so a known endpoint key is matched greedily by the
// caller's order: names are split on dots outside brackets.
func splitPath(p string) []string {
	var parts []string
	for _, seg := range strings.Split(p, ".") {
		if i := strings.IndexByte(seg, '['); i > 0 {
			parts = append(parts, seg[:i], seg[i:])
			continue
		}
		parts = append(parts, seg)
	}
	return parts
}

// FieldError is one validation failure: the field's dotted path and why.
type FieldError struct {
	Field  string
	Reason string
}

func (e FieldError) Error() string { return "field " + e.Field + ": " + e.Reason }

// Validate checks what a reader of the envelope relies on: identity,
// bands ordered min ≤ max, ratios in [0,1], non-negative rates and
// latencies, failed ≤ total, and a usable tolerance.
func (env *Envelope) Validate() []FieldError {
	v := &validator{}
	if env.APIVersion != APIVersion {
		v.add("apiVersion", "is %q, want %q", env.APIVersion, APIVersion)
	}
	if env.Kind != Kind {
		v.add("kind", "is %q, want %q", env.Kind, Kind)
	}
	if _, err := ParseMatch(env.Match); err != nil {
		v.add("match", "%v", err)
	}
	v.spread("throughput", env.Throughput, true)
	v.spread("iterations", env.Iterations, false)
	v.spread("requests_per_iteration", env.RequestsPerIteration, false)
	v.latency("latency", env.Latency)
	for _, name := range sortedKeys(env.Endpoints) {
		e := env.Endpoints[name]
		v.latency("endpoints."+name, Latency{Avg: e.Avg, Median: e.Median, P95: e.P95, P99: e.P99, Max: e.Max})
		if e.Metric == "" && (e.Tag == "" || e.Value == "") {
			v.add("endpoints."+name, "has neither metric nor tag and value: the rules cannot select its series")
		}
		if e.Share < 0 || e.Share > 1 {
			v.add("endpoints."+name+".share", "is %v, want a ratio in [0,1]", e.Share)
		}
	}
	v.errors(env.Errors)
	for i, s := range env.Provenance.Sources {
		if s.File == "" {
			v.add(fmt.Sprintf("provenance.sources[%d].file", i), "is empty")
		}
		if s.SHA256 != "" {
			if b, err := hex.DecodeString(s.SHA256); err != nil || len(b) != sha256.Size {
				v.add(fmt.Sprintf("provenance.sources[%d].sha256", i), "is %q, want 64 hex digits", s.SHA256)
			}
		}
	}
	v.tolerance(env.Tolerance)
	return append(v.errs, env.validateRunValues()...)
}

// validator collects the field errors of one Validate.
type validator struct{ errs []FieldError }

func (v *validator) add(field, format string, a ...any) {
	v.errs = append(v.errs, FieldError{field, fmt.Sprintf(format, a...)})
}

// finite reports whether x is a finite value ≥ 0, adding the error when
// not.
func (v *validator) finite(field string, x float64) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		v.add(field, "is %v, want a finite number", x)
		return false
	}
	if x < 0 {
		v.add(field, "is %v, want a value ≥ 0", x)
		return false
	}
	return true
}

func (v *validator) spread(field string, s Spread, required bool) {
	if s.N == 0 {
		if required {
			v.add(field+".n", "is 0: the envelope needs at least one run")
		}
		return
	}
	ok := v.finite(field+".min", s.Min) && v.finite(field+".max", s.Max) && v.finite(field+".mean", s.Mean) &&
		v.finite(field+".stddev", s.StdDev) && v.finite(field+".cv", s.CV)
	if !ok {
		return
	}
	if s.Min > s.Max {
		v.add(field+".min", "%v is above %s.max %v", s.Min, field, s.Max)
	}
	if s.Mean < s.Min || s.Mean > s.Max {
		v.add(field+".mean", "%v is outside [%v, %v]", s.Mean, s.Min, s.Max)
	}
	if s.CILow > s.CIHigh {
		v.add(field+".ci95_low", "%v is above ci95_high %v", s.CILow, s.CIHigh)
	}
}

func (v *validator) band(field string, b Band) {
	if b.N == 0 {
		return
	}
	if v.finite(field+".min", b.Min) && v.finite(field+".max", b.Max) && b.Min > b.Max {
		v.add(field+".min", "%v is above %s.max %v", b.Min, field, b.Max)
	}
	if b.Mean != 0 && (b.Mean < b.Min || b.Mean > b.Max) {
		v.add(field+".mean", "%v is outside [%v, %v]", b.Mean, b.Min, b.Max)
	}
}

func (v *validator) latency(field string, l Latency) {
	v.band(field+".avg", l.Avg)
	v.band(field+".median", l.Median)
	v.band(field+".p95", l.P95)
	v.band(field+".p99", l.P99)
	v.band(field+".max", l.Max)
	if l.P95.N > 0 && l.P99.N > 0 && l.P95.Min > l.P99.Max {
		v.add(field+".p95.min", "%v is above %s.p99.max %v", l.P95.Min, field, l.P99.Max)
	}
}

func (v *validator) errors(e Errors) {
	if e.Failed < 0 || e.Total < 0 {
		v.add("errors.failed", "counts must be ≥ 0")
	}
	if e.Failed > e.Total {
		v.add("errors.failed", "%d is above errors.total %d", e.Failed, e.Total)
	}
	if e.Rate < 0 || e.Rate > 1 {
		v.add("errors.rate", "is %v, want a ratio in [0,1]", e.Rate)
	}
}

func (v *validator) tolerance(t figures.Tolerance) {
	ratio := func(field string, x float64) {
		if math.IsNaN(x) || x < 0 || x > 1 {
			v.add("tolerance."+field, "is %v, want a ratio in [0,1]", x)
		}
	}
	ratio("throughput_drop", t.ThroughputDrop)
	ratio("error_ratio", t.ErrorRatio)
	ratio("false_alarm", t.FalseAlarm)
	if t.LatencyRise < 0 || math.IsNaN(t.LatencyRise) {
		v.add("tolerance.latency_rise", "is %v, want a ratio ≥ 0", t.LatencyRise)
	}
	if t.MaxCV < 0 || math.IsNaN(t.MaxCV) {
		v.add("tolerance.max_cv", "is %v, want a ratio ≥ 0", t.MaxCV)
	}
	if t.Confidence <= 0 || t.Confidence >= 1 {
		v.add("tolerance.confidence", "is %v, want a probability in (0,1)", t.Confidence)
	}
	if t.Window == "" {
		v.add("tolerance.window", "is empty, want a duration such as 5m")
	} else if !validWindow(t.Window) {
		v.add("tolerance.window", "%q is not a Prometheus duration such as 5m", t.Window)
	}
}

// validWindow accepts Prometheus durations: one or more <int><unit> with
// units y w d h m s ms, largest first.
func validWindow(s string) bool {
	units := []string{"y", "w", "d", "h", "m", "s", "ms"}
	last := -1
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 {
			return false
		}
		s = s[i:]
		found := -1
		for j, u := range units {
			if strings.HasPrefix(s, u) && (u != "m" || !strings.HasPrefix(s, "ms")) {
				found = j
				s = s[len(u):]
				break
			}
		}
		if found <= last {
			return false
		}
		last = found
	}
	return true
}
