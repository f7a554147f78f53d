package k6

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"
)

// ParseNDJSONLine decodes one --out json line without allocating for the
// common shapes. It fills p and returns (true, nil, nil) for a Point line,
// or (false, def, nil) for a Metric line. Errors name the field.
//
// p.Tags and p.Metadata are reused when non-nil (kept when the line has the
// same pairs, else cleared and filled), so a caller looping over a stream
// allocates only for new tag sets; copy them to keep them past the next
// call. Keys may come in any order; NaN, Inf, truncated lines and wrong
// types are errors.
func ParseNDJSONLine(line []byte, p *Point) (isPoint bool, def *MetricDef, err error) {
	var r rawLine
	line = trimEOL(line)
	if !scanFast(line, &r) {
		if err := scanNDJSON(line, &r); err != nil {
			return false, nil, err
		}
	}
	if r.kind == kindMetric {
		def, err := decodeMetricDef(r.data)
		return false, def, err
	}
	if err := fillPoint(&r, p); err != nil {
		return false, nil, err
	}
	return true, nil, nil
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// fillPoint turns a scanned Point line into p.
func fillPoint(r *rawLine, p *Point) error {
	// Keep the previous name's string when it is the same metric: no
	// allocation per line on a stream.
	name := p.Metric
	if r.escaped || name != string(r.metric) {
		var err error
		if name, err = unescape(r.metric, r.escaped, "metric"); err != nil {
			return err
		}
	}
	p.Metric = name
	p.Time = unixTime(r.time, r.offset)
	p.Value = r.value
	if p.Tags == nil {
		p.Tags = map[string]string{}
	}
	if err := refill(p.Tags, r.tags, "data.tags"); err != nil {
		return err
	}
	if r.metadata == nil {
		if p.Metadata != nil {
			clear(p.Metadata)
		}
		return nil
	}
	if p.Metadata == nil {
		p.Metadata = map[string]string{}
	}
	return refill(p.Metadata, r.metadata, "data.metadata")
}

// refill makes m hold the object obj (nil = empty). When m already holds
// exactly those pairs, as on a stream where tag sets repeat, nothing is
// allocated.
func refill(m map[string]string, obj []byte, field string) error {
	if obj == nil {
		clear(m)
		return nil
	}
	if sameStringObject(obj, m) {
		return nil
	}
	clear(m)
	return decodeStringObject(obj, field, m)
}

// sameStringObject reports whether the flat object obj has exactly m's
// pairs, without allocating. Escaped strings are never "same" (the slow
// path decodes them).
func sameStringObject(obj []byte, m map[string]string) bool {
	s := scanner{b: obj}
	if s.expect('{', "") != nil {
		return false
	}
	n := 0
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		return len(m) == 0
	}
	for {
		k, kesc, err := s.str("")
		if err != nil || kesc || s.expect(':', "") != nil {
			return false
		}
		v, vesc, err := s.str("")
		if err != nil || vesc {
			return false
		}
		old, ok := m[string(k)]
		if !ok || old != string(v) {
			return false
		}
		n++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			continue
		}
		return s.expect('}', "") == nil && s.i == len(s.b) && n == len(m)
	}
}

// unixTime rebuilds a time with its original zone offset (UTC for Z).
func unixTime(ns int64, offset int) time.Time {
	t := time.Unix(0, ns)
	if offset == 0 {
		return t.UTC()
	}
	loc, ok := zones.Load(offset)
	if !ok {
		loc, _ = zones.LoadOrStore(offset, time.FixedZone("", offset))
	}
	return t.In(loc.(*time.Location))
}

// zones caches fixed zones by offset: k6 writes the machine's local zone.
var zones sync.Map

// metricDefJSON is the "data" object of a Metric line.
type metricDefJSON struct {
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Contains   string            `json:"contains"`
	Thresholds []json.RawMessage `json:"thresholds"`
	Submetrics []struct {
		Name   string            `json:"name"`
		Suffix string            `json:"suffix"`
		Tags   map[string]string `json:"tags"`
	} `json:"submetrics"`
}

func decodeMetricDef(data []byte) (*MetricDef, error) {
	var j metricDefJSON
	if err := json.Unmarshal(data, &j); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			return nil, errf("data."+te.Field, "got JSON %s, want %s", te.Value, te.Type)
		}
		return nil, errf("data", "%v", err)
	}
	if j.Name == "" {
		return nil, errf("data.name", "missing")
	}
	t, c, err := typeAndContains(j.Type, j.Contains)
	if err != nil {
		if se, ok := err.(*scanError); ok {
			se.field = "data." + se.field
		}
		return nil, err
	}
	def := &MetricDef{Name: j.Name, Type: t, Contains: c}
	for _, th := range j.Thresholds {
		// A threshold is a string, or {"threshold": "...", "abortOnFail": …}.
		var s string
		if json.Unmarshal(th, &s) != nil {
			var o struct {
				Threshold string `json:"threshold"`
			}
			if json.Unmarshal(th, &o) != nil || o.Threshold == "" {
				return nil, errf("data.thresholds", "want a string or {\"threshold\": …}")
			}
			s = o.Threshold
		}
		def.Thresholds = append(def.Thresholds, s)
	}
	for _, sm := range j.Submetrics {
		sd := SubmetricDef{Name: sm.Name, Suffix: sm.Suffix, Tags: sm.Tags}
		if sd.Name == "" {
			sd.Name = j.Name + "{" + sm.Suffix + "}"
		}
		if sd.Tags == nil {
			_, sd.Tags = SplitName(sd.Name)
		}
		def.Submetrics = append(def.Submetrics, sd)
	}
	return def, nil
}

// ndjsonParser reads --out json lines with the hand-written scanner.
type ndjsonParser struct{}

func (ndjsonParser) parse(w *worker, line []byte) ([]byte, bool, error) {
	line = trimEOL(line)
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, true, nil
	}
	r := &w.raw
	if err := scanNDJSON(line, r); err != nil {
		return nil, false, err
	}
	if r.kind == kindMetric {
		if _, err := decodeMetricDef(r.data); err != nil {
			return nil, false, err
		}
		return nil, false, nil
	}
	metric := r.metric
	if r.escaped {
		s, err := unescape(metric, true, "metric")
		if err != nil {
			return nil, false, err
		}
		metric = []byte(s)
	}
	w.curT, w.curOff, w.curV = r.time, r.offset, r.value
	w.tagBytes, w.keyBuilt = r.tags, false
	return metric, false, nil
}

func (ndjsonParser) decodeTags(w *worker, tags map[string]string) error {
	if w.raw.tags == nil {
		return nil
	}
	return decodeStringObject(w.raw.tags, "data.tags", tags)
}

func (ndjsonParser) metadata(w *worker) (map[string]string, error) {
	if w.raw.metadata == nil {
		return nil, nil
	}
	m := map[string]string{}
	return m, decodeStringObject(w.raw.metadata, "data.metadata", m)
}

// noteDefs records the Metric lines of a chunk (copy on write: chunks
// already dispatched keep their map).
func noteDefs(data []byte, defs map[string]*MetricDef) map[string]*MetricDef {
	copied := false
	for off := 0; ; {
		// 'M' is rare in k6 lines, so IndexByte finds candidates fast
		// (searching for the quote first would stop on every string).
		i := bytes.IndexByte(data[off:], 'M')
		if i < 0 {
			return defs
		}
		i += off
		if i == 0 || data[i-1] != '"' || !bytes.HasPrefix(data[i:], []byte(`Metric"`)) {
			off = i + 1
			continue
		}
		ls := bytes.LastIndexByte(data[:i], '\n') + 1
		le := bytes.IndexByte(data[i:], '\n')
		if le < 0 {
			le = len(data)
		} else {
			le += i
		}
		off = le
		var r rawLine
		if scanNDJSON(trimEOL(data[ls:le]), &r) != nil || r.kind != kindMetric {
			continue
		}
		d, err := decodeMetricDef(r.data)
		if err != nil {
			continue
		}
		if _, ok := defs[d.Name]; ok {
			continue
		}
		if !copied {
			nd := make(map[string]*MetricDef, len(defs)+1)
			for k, v := range defs {
				nd[k] = v
			}
			defs, copied = nd, true
		}
		defs[d.Name] = d
	}
}
