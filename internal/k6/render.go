package k6

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// statOrder lists a metric's values in k6's order: trends by the stats
// asked for, then any other trend stats the file had; other types by
// their fixed keys.
func statOrder(m *Metric, stats []string) []string {
	var fixed []string
	switch m.Type {
	case Counter:
		fixed = []string{"count", "rate"}
	case Rate:
		fixed = []string{"passes", "fails", "rate"}
	case Gauge:
		fixed = []string{"value", "min", "max"}
	}
	if fixed != nil {
		out := fixed[:0:0]
		for _, k := range fixed {
			if _, ok := m.Values[k]; ok {
				out = append(out, k)
			}
		}
		return out
	}
	if stats != nil {
		var out []string
		for _, k := range stats {
			if _, ok := m.Values[k]; ok {
				out = append(out, k)
			}
		}
		return out
	}
	// No list: the file's own stats in k6's default order, then the rest
	// (percentiles ascending).
	rank := func(k string) (int, float64) {
		switch k {
		case "count":
			return 0, 0
		case "avg":
			return 1, 0
		case "min":
			return 2, 0
		case "med":
			return 3, 0
		case "max":
			return 4, 0
		}
		if strings.HasPrefix(k, "p(") {
			v, _ := strconv.ParseFloat(strings.TrimSuffix(k[2:], ")"), 64)
			return 5, v
		}
		return 6, 0
	}
	out := make([]string, 0, len(m.Values))
	for k := range m.Values {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, vi := rank(out[i])
		rj, vj := rank(out[j])
		if ri != rj {
			return ri < rj
		}
		if vi != vj {
			return vi < vj
		}
		return out[i] < out[j]
	})
	return out
}

// WriteJSON writes runs as {"runs":[{"source","format","mode","duration_s",
// "metrics":{name:{"type","contains","values":{…}}}}]}, values in k6's
// units (ms for time) and in k6's stat order. stats nil keeps every trend
// stat a summary file had.
func WriteJSON(w io.Writer, runs []*Run, stats []string) error {
	var b bytes.Buffer
	b.WriteString(`{"runs":[`)
	for i, r := range runs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"source":`)
		writeJSONString(&b, r.Source)
		b.WriteString(`,"format":`)
		writeJSONString(&b, string(r.Format))
		b.WriteString(`,"mode":`)
		writeJSONString(&b, string(r.Mode))
		b.WriteString(`,"duration_s":`)
		writeJSONNumber(&b, r.Duration.Seconds())
		if !r.Start.IsZero() {
			b.WriteString(`,"start":`)
			writeJSONString(&b, r.Start.UTC().Format("2006-01-02T15:04:05.999999999Z07:00"))
			b.WriteString(`,"end":`)
			writeJSONString(&b, r.End.UTC().Format("2006-01-02T15:04:05.999999999Z07:00"))
		}
		if r.Skipped > 0 {
			fmt.Fprintf(&b, `,"skipped_lines":%d`, r.Skipped)
		}
		b.WriteString(`,"metrics":`)
		writeMetrics(&b, r.Metrics, stats)
		if len(r.Checks) > 0 {
			b.WriteString(`,"checks":{`)
			for j, n := range sortedNames(r.Checks) {
				if j > 0 {
					b.WriteByte(',')
				}
				c := r.Checks[n]
				writeJSONString(&b, n)
				fmt.Fprintf(&b, `:{"passes":%d,"fails":%d}`, c.Passes, c.Fails)
			}
			b.WriteByte('}')
		}
		if r.GroupBy != "" {
			b.WriteString(`,"group_by":`)
			writeJSONString(&b, r.GroupBy)
			b.WriteString(`,"groups":{`)
			for j, g := range sortedNames(r.Groups) {
				if j > 0 {
					b.WriteByte(',')
				}
				writeJSONString(&b, g)
				b.WriteString(`:{"metrics":`)
				writeMetrics(&b, r.Groups[g], stats)
				b.WriteByte('}')
			}
			b.WriteByte('}')
		}
		b.WriteByte('}')
	}
	b.WriteString("]}\n")
	// Re-indent for people; the key order above is kept.
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return err
	}
	_, err := w.Write(out.Bytes())
	return err
}

func writeMetrics(b *bytes.Buffer, ms map[string]*Metric, stats []string) {
	b.WriteByte('{')
	for i, n := range sortedNames(ms) {
		m := ms[n]
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(b, n)
		b.WriteString(`:{"type":`)
		writeJSONString(b, string(m.Type))
		b.WriteString(`,"contains":`)
		writeJSONString(b, string(m.Contains))
		b.WriteString(`,"values":{`)
		for j, k := range statOrder(m, stats) {
			if j > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			writeJSONNumber(b, m.Values[k])
		}
		b.WriteByte('}')
		if len(m.Thresholds) > 0 {
			b.WriteString(`,"thresholds":{`)
			for j, e := range sortedNames(m.Thresholds) {
				if j > 0 {
					b.WriteByte(',')
				}
				writeJSONString(b, e)
				fmt.Fprintf(b, `:{"ok":%t}`, m.Thresholds[e])
			}
			b.WriteByte('}')
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
}

// writeJSONString quotes s without HTML escaping, so a threshold reads
// "p(95)<500" as k6 writes it.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes, and a bytes.Buffer write cannot fail
	b.Truncate(b.Len() - 1) // Encode's newline
}

// writeJSONNumber prints the shortest form that reads back to the same
// float64, as k6 (JavaScript) prints it.
func writeJSONNumber(b *bytes.Buffer, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		b.WriteString("null")
		return
	}
	b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
}

// WriteText writes a readable table per run.
func WriteText(w io.Writer, runs []*Run, stats []string) error {
	// ew keeps the first write error, which is returned after Flush, so the
	// individual Fprintf results need no check.
	ew := &errWriter{w: w}
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	for i, r := range runs {
		if i > 0 {
			_, _ = fmt.Fprintln(tw)
		}
		// No tab here: the title is not a column, and a tab would widen the
		// METRIC column to the length of the file name.
		_, _ = fmt.Fprintf(tw, "%s  %s, %s mode, duration %.3fs", r.Source, r.Format, r.Mode, r.Duration.Seconds())
		if r.Skipped > 0 {
			_, _ = fmt.Fprintf(tw, ", %d bad lines skipped", r.Skipped)
		}
		_, _ = fmt.Fprintln(tw)
		writeTextMetrics(tw, "", r.Metrics, stats)
		var ths []string
		for _, n := range sortedNames(r.Metrics) {
			for _, e := range sortedNames(r.Metrics[n].Thresholds) {
				verdict := "passed"
				if !r.Metrics[n].Thresholds[e] {
					verdict = "FAILED"
				}
				ths = append(ths, fmt.Sprintf("  %s\t%s\t%s\n", n, e, verdict))
			}
		}
		if len(ths) > 0 {
			_, _ = fmt.Fprintln(tw, "THRESHOLD\tEXPRESSION\tRESULT")
			for _, l := range ths {
				_, _ = fmt.Fprint(tw, l)
			}
		}
		if len(r.Checks) > 0 {
			_, _ = fmt.Fprintln(tw, "CHECK\tPASSES\tFAILS")
			for _, n := range sortedNames(r.Checks) {
				c := r.Checks[n]
				_, _ = fmt.Fprintf(tw, "  %s\t%d\t%d\n", n, c.Passes, c.Fails)
			}
		}
		for _, g := range sortedNames(r.Groups) {
			_, _ = fmt.Fprintf(tw, "\n%s=%s\n", r.GroupBy, g)
			writeTextMetrics(tw, "  ", r.Groups[g], stats)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return ew.err
}

func writeTextMetrics(tw *tabwriter.Writer, indent string, ms map[string]*Metric, stats []string) {
	_, _ = fmt.Fprintf(tw, "%sMETRIC\tTYPE\tVALUES\n", indent)
	for _, n := range sortedNames(ms) {
		m := ms[n]
		var parts []string
		for _, k := range statOrder(m, stats) {
			parts = append(parts, k+"="+formatValue(m, k))
		}
		_, _ = fmt.Fprintf(tw, "%s  %s\t%s\t%s\n", indent, n, m.Type, strings.Join(parts, "  "))
	}
}

// errWriter keeps the first write error, so a table written in many small
// Fprintf calls reports a failed write (a closed pipe, a full disk) once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// formatValue renders a value for people: ms and bytes with units, counts
// as integers, others with up to 6 significant digits.
func formatValue(m *Metric, k string) string {
	v := m.Values[k]
	switch {
	case k == "count" && m.Type == Trend, k == "passes", k == "fails":
		return strconv.FormatFloat(v, 'f', -1, 64)
	case k == "rate" && m.Type == Counter:
		return strconv.FormatFloat(v, 'g', 6, 64) + "/s"
	case m.Type == Trend && m.Contains == Time:
		return strconv.FormatFloat(v, 'f', 3, 64) + "ms"
	case m.Contains == Data && (m.Type != Counter || k == "count"):
		return strconv.FormatFloat(v, 'f', -1, 64) + "B"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}
