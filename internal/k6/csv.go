package k6

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// csvParser reads --out csv rows by the header's columns. Rows without a
// quote are split on commas directly; quoted rows go through encoding/csv.
// An empty cell means the tag is not set.
type csvParser struct {
	header  []string
	ncol    int
	iName   int
	iTime   int
	iValue  int
	iExtra  int
	iMeta   int
	tagCols []int
	fields  [][]byte
	curMeta []byte
}

func newCSVParser(hdr []byte) (*csvParser, error) {
	rec, err := csv.NewReader(bytes.NewReader(hdr)).Read()
	if err != nil {
		return nil, fmt.Errorf("CSV header: %v", err)
	}
	p := &csvParser{header: rec, ncol: len(rec), iName: -1, iTime: -1, iValue: -1, iExtra: -1, iMeta: -1}
	for i, h := range rec {
		switch h {
		case "metric_name":
			p.iName = i
		case "timestamp":
			p.iTime = i
		case "metric_value":
			p.iValue = i
		case "extra_tags":
			p.iExtra = i
		case "metadata":
			p.iMeta = i
		default:
			p.tagCols = append(p.tagCols, i)
		}
	}
	for _, c := range []struct {
		i    int
		name string
	}{{p.iName, "metric_name"}, {p.iTime, "timestamp"}, {p.iValue, "metric_value"}} {
		if c.i < 0 {
			return nil, fmt.Errorf("CSV header: no column %q", c.name)
		}
	}
	return p, nil
}

func (p *csvParser) split(line []byte) error {
	p.fields = p.fields[:0]
	if bytes.IndexByte(line, '"') < 0 {
		for {
			i := bytes.IndexByte(line, ',')
			if i < 0 {
				p.fields = append(p.fields, line)
				break
			}
			p.fields = append(p.fields, line[:i])
			line = line[i+1:]
		}
	} else {
		r := csv.NewReader(bytes.NewReader(line))
		r.FieldsPerRecord = -1
		rec, err := r.Read()
		if err != nil {
			return errf("", "bad CSV quoting: %v", err)
		}
		for _, f := range rec {
			p.fields = append(p.fields, []byte(f))
		}
	}
	if len(p.fields) != p.ncol {
		return errf("", "want %d fields as in the header, got %d", p.ncol, len(p.fields))
	}
	return nil
}

func (p *csvParser) parse(w *worker, line []byte) ([]byte, bool, error) {
	line = trimEOL(line)
	if len(line) == 0 {
		return nil, true, nil
	}
	if err := p.split(line); err != nil {
		return nil, false, err
	}
	name := p.fields[p.iName]
	if len(name) == 0 {
		return nil, false, errf("metric_name", "empty")
	}
	ts := p.fields[p.iTime]
	t, off, err := parseCSVTime(ts)
	if err != nil {
		return nil, false, errf("timestamp", "%v", err)
	}
	vb := p.fields[p.iValue]
	v, ok := fastFloat(vb)
	if !ok {
		v, err = strconv.ParseFloat(string(vb), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false, errf("metric_value", "want a finite number, got %q", truncate(string(vb), 40))
		}
	}
	w.curT, w.curOff, w.curV = t, off, v
	k := append(append(w.key[:0], name...), 0)
	for _, c := range p.tagCols {
		k = append(append(k, p.fields[c]...), 1)
	}
	if p.iExtra >= 0 {
		k = append(k, p.fields[p.iExtra]...)
	}
	w.key = k
	w.tagBytes, w.keyBuilt = k[len(name)+1:], true
	if p.iMeta >= 0 {
		p.curMeta = p.fields[p.iMeta]
	}
	return name, false, nil
}

func (p *csvParser) decodeTags(w *worker, tags map[string]string) error {
	for _, c := range p.tagCols {
		if v := p.fields[c]; len(v) > 0 {
			tags[p.header[c]] = string(v)
		}
	}
	if p.iExtra >= 0 {
		splitPairs(p.fields[p.iExtra], tags)
	}
	return nil
}

func (p *csvParser) metadata(w *worker) (map[string]string, error) {
	if len(p.curMeta) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	splitPairs(p.curMeta, m)
	return m, nil
}

// splitPairs reads k6's "k=v&k2=v2" cells (not escaped: a value holding
// '&' or '=' cannot be told apart).
func splitPairs(b []byte, into map[string]string) {
	for part := range strings.SplitSeq(string(b), "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		into[k] = v
	}
}

// parseCSVTime reads every k6 CSV timeFormat: rfc3339 / rfc3339_nano, or an
// integer of unix seconds, milli-, micro- or nanoseconds, told apart by
// magnitude (seconds below 1e11, i.e. before year 5138).
func parseCSVTime(b []byte) (int64, int, error) {
	if len(b) == 0 {
		return 0, 0, fmt.Errorf("empty")
	}
	if bytes.IndexByte(b, 'T') > 0 || bytes.IndexByte(b, 't') > 0 {
		return parseTime(b)
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' || n > math.MaxInt64/10-10 {
			return 0, 0, fmt.Errorf("want unix time digits or RFC 3339, got %q", truncate(string(b), 40))
		}
		n = n*10 + int64(c-'0')
	}
	switch {
	case n < 1e11:
		return n * 1e9, 0, nil
	case n < 1e14:
		return n * 1e6, 0, nil
	case n < 1e17:
		return n * 1e3, 0, nil
	}
	return n, 0, nil
}
