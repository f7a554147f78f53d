package k6

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// lineKind is what an NDJSON line holds.
type lineKind uint8

const (
	kindPoint lineKind = iota + 1
	kindMetric
)

// rawLine is one --out json line cut into spans of the line's bytes, with
// no allocation: the hot path of the loader reads these and only decodes
// tags when it meets a new tag set.
type rawLine struct {
	kind     lineKind
	metric   []byte // "metric" value (unescaped only when it had no escapes)
	data     []byte // the whole "data" object (Metric lines)
	time     int64  // unix nanoseconds
	offset   int    // zone offset in seconds, to rebuild time.Time
	value    float64
	tags     []byte // the "tags" object text, or nil for null/absent
	metadata []byte // the "metadata" object text, or nil
	escaped  bool   // metric name had escapes: decode it with strconv

	// memo holds a copy of the last tags object seen by this rawLine's
	// owner; an identical run of bytes is the same complete object, so it
	// is skipped with one comparison (k6 writes ten lines per request with
	// the same tags).
	memo    []byte
	useMemo bool

	// The last time's text to the second, its zone suffix and value.
	memoSecs   [19]byte
	memoSecsOK bool
	memoZone   string
	memoBase   int64
	memoOff    int
}

// scanError names the field a line broke on.
type scanError struct {
	field string
	msg   string
}

func (e *scanError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return fmt.Sprintf("field %q: %s", e.field, e.msg)
}

func errf(field, format string, args ...any) error {
	return &scanError{field: field, msg: fmt.Sprintf(format, args...)}
}

var errTrailing = errors.New("unexpected data after the JSON object")

// scanner walks one JSON value at a time over a line.
type scanner struct {
	b     []byte
	i     int
	noEsc bool // the line has no backslash: strings need no escape check
}

func (s *scanner) ws() {
	for s.i < len(s.b) && s.b[s.i] <= ' ' {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) expect(c byte, field string) error {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return nil
	}
	s.ws()
	if s.i >= len(s.b) {
		return errf(field, "line ends early (truncated?)")
	}
	if s.b[s.i] != c {
		return errf(field, "want %q, got %q", c, s.b[s.i])
	}
	s.i++
	return nil
}

// str reads a JSON string and returns its raw content (between quotes) and
// whether it contains escapes. The closing quote is found with
// bytes.IndexByte (vectorized); escapes are rare in k6 output.
func (s *scanner) str(field string) ([]byte, bool, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.ws()
		if s.i >= len(s.b) {
			return nil, false, errf(field, "line ends early (truncated?)")
		}
		if s.b[s.i] != '"' {
			return nil, false, errf(field, "want a string, got %q", s.b[s.i])
		}
	}
	s.i++
	start := s.i
	esc := false
	// Short strings (keys, names): a plain loop.
	for j := s.i; j < len(s.b) && j < s.i+32; j++ {
		if c := s.b[j]; c == '"' {
			s.i = j + 1
			return s.b[start:j], false, nil
		} else if c == '\\' {
			break
		}
	}
	for {
		q := bytes.IndexByte(s.b[s.i:], '"')
		if q < 0 {
			return nil, false, errf(field, "unterminated string (truncated?)")
		}
		end := s.i + q
		if s.noEsc || bytes.IndexByte(s.b[s.i:end], '\\') < 0 {
			s.i = end + 1
			return s.b[start:end], esc, nil
		}
		// Walk the escapes by hand up to the real closing quote.
		esc = true
		for s.i < len(s.b) {
			c := s.b[s.i]
			if c == '\\' {
				s.i += 2
				continue
			}
			if c == '"' {
				out := s.b[start:s.i]
				s.i++
				return out, esc, nil
			}
			s.i++
		}
		return nil, false, errf(field, "unterminated string (truncated?)")
	}
}

// flatObject passes over an object of string values written compactly
// ({"k":"v","k2":"v2"}), the shape of k6's tags and metadata; anything else
// returns false with the position unchanged, for skip to handle.
func (s *scanner) flatObject() bool {
	b, i := s.b, s.i
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	if i < len(b) && b[i] == '}' {
		s.i = i + 1
		return true
	}
	for {
		for part := range 2 { // key, then value
			if i >= len(b) || b[i] != '"' {
				return false
			}
			// Tag keys and values are short: a plain loop beats
			// IndexByte's call overhead here.
			j := i + 1
			for j < len(b) && b[j] != '"' && b[j] != '\\' {
				j++
			}
			if j >= len(b) || b[j] == '\\' {
				return false
			}
			i = j + 1
			if i >= len(b) {
				return false
			}
			if part == 0 {
				if b[i] != ':' {
					return false
				}
				i++
			}
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			s.i = i + 1
			return true
		default:
			return false
		}
	}
}

// skip passes over any JSON value, checking its syntax.
// afterElem consumes what follows an element of an object or array: a
// comma (more is true) or the closing byte.
func (s *scanner) afterElem(closing byte, field string) (more bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return false, errf(field, "line ends early (truncated?)")
	}
	if s.b[s.i] == ',' {
		s.i++
		return true, nil
	}
	return false, s.expect(closing, field)
}

func (s *scanner) skip(field string, depth int) error {
	if depth > 64 {
		return errf(field, "nested too deep")
	}
	s.ws()
	if s.i >= len(s.b) {
		return errf(field, "line ends early (truncated?)")
	}
	switch s.b[s.i] {
	case '"':
		_, _, err := s.str(field)
		return err
	case '{':
		if s.flatObject() {
			return nil
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return nil
		}
		for {
			if _, _, err := s.str(field); err != nil {
				return err
			}
			if err := s.expect(':', field); err != nil {
				return err
			}
			if err := s.skip(field, depth+1); err != nil {
				return err
			}
			if more, err := s.afterElem('}', field); !more {
				return err
			}
		}
	case '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return nil
		}
		for {
			if err := s.skip(field, depth+1); err != nil {
				return err
			}
			if more, err := s.afterElem(']', field); !more {
				return err
			}
		}
	case 't':
		return s.lit("true", field)
	case 'f':
		return s.lit("false", field)
	case 'n':
		return s.lit("null", field)
	default:
		_, err := s.num(field)
		return err
	}
}

func (s *scanner) lit(w, field string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return errf(field, "invalid literal")
	}
	s.i += len(w)
	return nil
}

// num reads a JSON number. NaN and Inf cannot be written in JSON; an
// overflowing exponent is refused too.
func (s *scanner) num(field string) (float64, error) {
	s.ws()
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.i++
			continue
		}
		break
	}
	tok := s.b[start:s.i]
	if len(tok) == 0 {
		if s.i >= len(s.b) {
			return 0, errf(field, "line ends early (truncated?)")
		}
		if s.b[s.i] == 'N' || s.b[s.i] == 'I' || s.b[s.i] == '"' {
			return 0, errf(field, "want a finite number, got %s", quoteSpan(s.b[s.i:]))
		}
		return 0, errf(field, "want a number, got %q", s.b[s.i])
	}
	if !jsonNumber(tok) {
		return 0, errf(field, "want a JSON number, got %q", tok)
	}
	if v, ok := fastFloat(tok); ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errf(field, "want a finite number, got %q", tok)
	}
	return v, nil
}

// jsonNumber reports whether b is a number in JSON's grammar (RFC 8259):
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. strconv.ParseFloat
// and fastFloat alone would also take "01", "-01", "+1", ".5" and "1.".
func jsonNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(b)
}

// quoteSpan quotes the offending JSON token at the start of b (a string
// with its quotes, or a bare word up to the next delimiter), so an error
// shows "NaN" or "\"12\"" rather than the bytes that follow it.
func quoteSpan(b []byte) string {
	end := len(b)
	if len(b) > 0 && b[0] == '"' {
		if q := bytes.IndexByte(b[1:], '"'); q >= 0 {
			end = q + 2
		}
	} else if d := bytes.IndexAny(b, ",}] \t\r\n"); d >= 0 {
		end = d
	}
	if end > 40 {
		end = 40
	}
	return strconv.Quote(string(b[:end]))
}

// pow10 holds exact powers of ten for fastFloat.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat parses the plain decimals k6 writes ("1.526667", "0", "-3")
// exactly: with at most 15 significant digits the mantissa is an exact
// float64 and one division by an exact power of ten is correctly rounded
// (Clinger's fast path). Anything else goes to strconv.
func fastFloat(b []byte) (float64, bool) {
	i := 0
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	if i >= len(b) {
		return 0, false
	}
	var mant uint64
	digits, frac := 0, 0
	seenDot := false
	leading := true
	for ; i < len(b); i++ {
		c := b[i]
		if c == '.' {
			if seenDot {
				return 0, false
			}
			seenDot = true
			continue
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		if seenDot {
			frac++
		}
		if leading && c == '0' {
			continue
		}
		leading = false
		digits++
		if digits > 15 {
			return 0, false
		}
		mant = mant*10 + uint64(c-'0')
	}
	// "1." and ".5" go to strconv. (The JSON scanner checks the grammar,
	// leading zeros included, before it calls fastFloat; CSV values are
	// not JSON and take what strconv takes.)
	first := 0
	if neg {
		first = 1
	}
	if b[len(b)-1] == '.' || b[first] == '.' {
		return 0, false
	}
	if frac > 22 {
		return 0, false
	}
	v := float64(mant) / pow10[frac]
	if neg {
		v = -v
	}
	return v, true
}

// The canonical Point line shape of k6 v2 (encoding/json, struct order):
//
//	{"metric":"M","type":"Point","data":{"time":"T","value":V,"tags":{…}[,"metadata":{…}]}}
var (
	fastHead  = []byte(`{"metric":"`)
	fastMid   = []byte(`","type":"Point","data":{"time":"`)
	fastValue = []byte(`","value":`)
	fastTags  = []byte(`,"tags":`)
	fastMeta  = []byte(`,"metadata":`)
)

// scanFast reads a line of exactly the canonical shape with no escapes; any
// other shape (key order, spaces, escapes, errors) returns false and the
// general scanner takes over.
func scanFast(line []byte, out *rawLine) bool {
	if !bytes.HasPrefix(line, fastHead) {
		return false
	}
	s := scanner{b: line, i: len(fastHead), noEsc: true}
	j := s.i
	for j < len(line) && line[j] != '"' && line[j] != '\\' {
		j++
	}
	if j >= len(line) || line[j] != '"' || j == s.i {
		return false
	}
	metric := line[s.i:j]
	s.i = j
	if !bytes.HasPrefix(line[s.i:], fastMid) {
		return false
	}
	s.i += len(fastMid)
	j = s.i
	for j < len(line) && line[j] != '"' && line[j] != '\\' {
		j++
	}
	if j >= len(line) || line[j] != '"' {
		return false
	}
	t, off, err := parseTimeMemo(line[s.i:j], out)
	if err != nil {
		return false
	}
	s.i = j
	if !bytes.HasPrefix(line[s.i:], fastValue) {
		return false
	}
	s.i += len(fastValue)
	v, err := s.num("")
	if err != nil {
		return false
	}
	if !bytes.HasPrefix(line[s.i:], fastTags) {
		return false
	}
	s.i += len(fastTags)
	start := s.i
	var tags []byte
	if len(out.memo) > 0 && len(line)-start > len(out.memo) && bytes.Equal(line[start:start+len(out.memo)], out.memo) {
		s.i = start + len(out.memo)
		tags = line[start:s.i]
	} else {
		if bytes.HasPrefix(line[s.i:], []byte("null")) {
			s.i += 4
		} else if !s.flatObject() {
			return false
		} else {
			tags = line[start:s.i]
			if out.useMemo {
				out.memo = append(out.memo[:0], tags...)
			}
		}
	}
	var meta []byte
	if bytes.HasPrefix(line[s.i:], fastMeta) {
		s.i += len(fastMeta)
		start := s.i
		if !s.flatObject() {
			return false
		}
		meta = line[start:s.i]
	}
	if len(line)-s.i != 2 || line[s.i] != '}' || line[s.i+1] != '}' {
		return false
	}
	out.kind, out.metric, out.time, out.offset, out.value, out.tags, out.metadata, out.escaped =
		kindPoint, metric, t, off, v, tags, meta, false
	return true
}

// parseTimeMemo is parseTime with the previous line's date and time to the
// second remembered: k6 writes many samples per second.
func parseTimeMemo(b []byte, out *rawLine) (int64, int, error) {
	if len(b) > 20 && b[19] == '.' && out.memoSecsOK && string(b[:19]) == string(out.memoSecs[:]) {
		// Same second: only the fraction and the zone are new.
		i := 20
		var frac int64
		scale := int64(100000000)
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if i-20 < 9 {
				frac += int64(b[i]-'0') * scale
				scale /= 10
			}
			i++
		}
		if i > 20 && i < len(b) && string(b[i:]) == out.memoZone {
			return out.memoBase + frac, out.memoOff, nil
		}
	}
	ns, off, err := parseTime(b)
	if err != nil {
		return 0, 0, err
	}
	if out.useMemo && len(b) > 20 && b[19] == '.' {
		i := 20
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i > 20 && i-20 <= 9 {
			var frac int64
			scale := int64(100000000)
			for k := 20; k < i; k++ {
				frac += int64(b[k]-'0') * scale
				scale /= 10
			}
			copy(out.memoSecs[:], b[:19])
			if string(b[i:]) != out.memoZone {
				out.memoZone = string(b[i:])
			}
			out.memoBase, out.memoOff, out.memoSecsOK = ns-frac, off, true
		}
	}
	return ns, off, nil
}

// scanNDJSON cuts one --out json line. Keys may come in any order.
func scanNDJSON(line []byte, out *rawLine) error {
	if out.useMemo && scanFast(line, out) {
		return nil
	}
	*out = rawLine{memo: out.memo, useMemo: out.useMemo, memoSecs: out.memoSecs, memoSecsOK: out.memoSecsOK,
		memoZone: out.memoZone, memoBase: out.memoBase, memoOff: out.memoOff}
	s := scanner{b: line, noEsc: bytes.IndexByte(line, '\\') < 0}
	if err := s.expect('{', ""); err != nil {
		return err
	}
	var typ []byte
	var data []byte
	seenMetric := false
	parsed := false
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		return errf("type", "missing")
	}
	for {
		key, _, err := s.str("")
		if err != nil {
			return err
		}
		if err := s.expect(':', ""); err != nil {
			return err
		}
		switch string(key) {
		case "type":
			if typ, _, err = s.str("type"); err != nil {
				return err
			}
		case "metric":
			if out.metric, out.escaped, err = s.str("metric"); err != nil {
				return err
			}
			seenMetric = true
		case "data":
			s.ws()
			start := s.i
			if string(typ) == "Point" {
				// k6 writes type before data on Point lines: parse the
				// point in place instead of skipping and coming back.
				n, err := scanPointData(s.b[start:], out, s.noEsc)
				if err != nil {
					return err
				}
				s.i = start + n
				parsed = true
			} else if err := s.skip("data", 0); err != nil {
				return err
			}
			data = s.b[start:s.i]
		default:
			if err := s.skip("", 0); err != nil {
				return err
			}
		}
		s.ws()
		if s.i >= len(s.b) {
			return errf("", "line ends early (truncated?)")
		}
		if s.b[s.i] == ',' {
			s.i++
			continue
		}
		if err := s.expect('}', ""); err != nil {
			return err
		}
		break
	}
	s.ws()
	if s.i != len(s.b) {
		return errTrailing
	}
	return finishLine(out, typ, data, seenMetric, parsed, s.noEsc)
}

// finishLine checks a cut line has what its type needs and reads a
// Point's data when the keys came in an order that left it unread.
func finishLine(out *rawLine, typ, data []byte, seenMetric, parsed, noEsc bool) error {
	switch string(typ) {
	case "Point":
		out.kind = kindPoint
	case "Metric":
		out.kind = kindMetric
		out.data = data
		if data == nil {
			return errf("data", "missing")
		}
		return nil
	case "":
		return errf("type", "missing")
	default:
		return errf("type", "unknown line type %q", truncate(string(typ), 40))
	}
	if !seenMetric || len(out.metric) == 0 {
		return errf("metric", "missing")
	}
	if data == nil {
		return errf("data", "missing")
	}
	if parsed {
		return nil
	}
	n, err := scanPointData(data, out, noEsc)
	if err == nil && n != len(data) {
		err = errf("data", "unexpected data after the object")
	}
	return err
}

// scanPointData reads a Point's data object at the start of data and
// returns how many bytes it took.
func scanPointData(data []byte, out *rawLine, noEsc bool) (int, error) {
	n, err := scanPointObject(data, out, noEsc)
	if err != nil {
		return 0, err
	}
	return n, nil
}

func scanPointObject(data []byte, out *rawLine, noEsc bool) (int, error) {
	s := scanner{b: data, noEsc: noEsc}
	if err := s.expect('{', "data"); err != nil {
		return 0, err
	}
	seenTime, seenValue := false, false
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		return 0, errf("data.time", "missing")
	}
	for {
		key, _, err := s.str("data")
		if err != nil {
			return 0, err
		}
		if err := s.expect(':', "data"); err != nil {
			return 0, err
		}
		switch string(key) {
		case "time":
			ts, esc, err := s.str("data.time")
			if err != nil {
				return 0, err
			}
			if esc {
				return 0, errf("data.time", "escaped characters in a time")
			}
			if out.time, out.offset, err = parseTime(ts); err != nil {
				return 0, errf("data.time", "%v", err)
			}
			seenTime = true
		case "value":
			if out.value, err = s.num("data.value"); err != nil {
				return 0, err
			}
			seenValue = true
		case "tags", "metadata":
			s.ws()
			start := s.i
			field := "data.tags"
			if key[0] == 'm' {
				field = "data.metadata"
			}
			if s.i < len(s.b) && s.b[s.i] == 'n' {
				if err := s.lit("null", field); err != nil {
					return 0, err
				}
				break
			}
			if s.i < len(s.b) && s.b[s.i] != '{' {
				return 0, errf(field, "want an object of strings")
			}
			if key[0] == 't' && len(out.memo) > 0 && len(s.b)-start > len(out.memo) &&
				bytes.Equal(s.b[start:start+len(out.memo)], out.memo) {
				s.i = start + len(out.memo)
				out.tags = s.b[start:s.i]
				break
			}
			if err := s.skip(field, 0); err != nil {
				return 0, err
			}
			if key[0] == 't' {
				out.tags = s.b[start:s.i]
				if out.useMemo {
					out.memo = append(out.memo[:0], out.tags...)
				}
			} else {
				out.metadata = s.b[start:s.i]
			}
		default:
			if err := s.skip("data", 0); err != nil {
				return 0, err
			}
		}
		s.ws()
		if s.i >= len(s.b) {
			return 0, errf("data", "line ends early (truncated?)")
		}
		if s.b[s.i] == ',' {
			s.i++
			continue
		}
		if err := s.expect('}', "data"); err != nil {
			return 0, err
		}
		break
	}
	if !seenTime {
		return 0, errf("data.time", "missing")
	}
	if !seenValue {
		return 0, errf("data.value", "missing")
	}
	return s.i, nil
}

// decodeStringObject decodes a flat JSON object of strings ({"k":"v"}) into
// m, reusing m. Values that are not strings are an error naming field.
func decodeStringObject(obj []byte, field string, m map[string]string) error {
	s := scanner{b: obj}
	if err := s.expect('{', field); err != nil {
		return err
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		return nil
	}
	for {
		k, kesc, err := s.str(field)
		if err != nil {
			return err
		}
		if err := s.expect(':', field); err != nil {
			return err
		}
		// The value's field name ("data.tags.name") is only built for an
		// error: concatenating it for every tag cost a tenth of the live
		// ingest path's CPU.
		at := s.i
		v, vesc, err := s.str(field)
		if err != nil {
			s.i = at
			_, _, err = s.str(field + "." + string(k))
			return err
		}
		ks, err := unescape(k, kesc, field)
		if err != nil {
			return err
		}
		var vs string
		if vesc {
			if vs, err = unescape(v, vesc, field+"."+ks); err != nil {
				return err
			}
		} else {
			vs = string(v)
		}
		m[ks] = vs
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			continue
		}
		return s.expect('}', field)
	}
}

func unescape(b []byte, esc bool, field string) (string, error) {
	if !esc {
		return string(b), nil
	}
	v, err := strconv.Unquote(`"` + string(b) + `"`)
	if err != nil {
		// JSON allows \/ which Go's Unquote does not.
		fixed := make([]byte, 0, len(b))
		for i := 0; i < len(b); i++ {
			if b[i] == '\\' && i+1 < len(b) && b[i+1] == '/' {
				fixed = append(fixed, '/')
				i++
				continue
			}
			fixed = append(fixed, b[i])
		}
		if v, err = strconv.Unquote(`"` + string(fixed) + `"`); err != nil {
			return "", errf(field, "bad escape in string")
		}
	}
	return v, nil
}
