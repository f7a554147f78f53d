package k6

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// threshold is a parsed k6 threshold expression "<stat> <op> <number>",
// e.g. "p(95)<500", "rate<0.01", "count>=10".
type threshold struct {
	expr string
	stat string
	op   string
	v    float64
}

func parseThreshold(expr string) (threshold, error) {
	e := strings.TrimSpace(expr)
	for i := 0; i < len(e); i++ {
		switch e[i] {
		case '<', '>', '=', '!':
			op := e[i : i+1]
			if i+1 < len(e) && e[i+1] == '=' {
				op = e[i : i+2]
				if i+2 < len(e) && e[i+2] == '=' {
					op = e[i : i+3]
				}
			}
			stat := strings.TrimSpace(e[:i])
			v, err := strconv.ParseFloat(strings.TrimSpace(e[i+len(op):]), 64)
			if err != nil || stat == "" {
				return threshold{}, fmt.Errorf("threshold %q: want <stat> <op> <number>", expr)
			}
			switch op {
			case "<", "<=", ">", ">=", "==", "===", "!=":
			default:
				return threshold{}, fmt.Errorf("threshold %q: unknown operator %q", expr, op)
			}
			if stat == "med" || strings.HasPrefix(stat, "p(") {
				if _, err := parseStats([]string{stat}); err != nil {
					return threshold{}, fmt.Errorf("threshold %q: %v", expr, err)
				}
			}
			return threshold{expr: expr, stat: stat, op: op, v: v}, nil
		}
	}
	return threshold{}, fmt.Errorf("threshold %q: no comparison", expr)
}

// passed evaluates the threshold against a metric's values (k6 aborts a
// threshold whose stat the metric lacks; here it is reported as unknown).
func (t threshold) passed(values map[string]float64) (ok, known bool) {
	x, has := values[t.stat]
	if !has {
		return false, false
	}
	switch t.op {
	case "<":
		return x < t.v, true
	case "<=":
		return x <= t.v, true
	case ">":
		return x > t.v, true
	case ">=":
		return x >= t.v, true
	case "==", "===":
		return x == t.v, true
	default:
		return x != t.v, true
	}
}

// thresholdsOf parses the thresholds NDJSON Metric lines declare. They are
// evaluated on the metric itself (k6 writes no sub-metric thresholds
// there); a trend stat they need beyond st is returned in extra, to be
// computed and then dropped from the values.
func thresholdsOf(reg *registry, st []trendStat) (ths [][]threshold, extra [][]trendStat) {
	ths = make([][]threshold, len(reg.mlist))
	extra = make([][]trendStat, len(reg.mlist))
	for _, m := range reg.mlist {
		if m.def == nil {
			continue
		}
		for _, e := range m.def.Thresholds {
			th, err := parseThreshold(e)
			if err != nil {
				continue // k6 refused it already; nothing to report
			}
			ths[m.idx] = append(ths[m.idx], th)
			if m.typ == Trend && !slices.ContainsFunc(st, func(s trendStat) bool { return s.name == th.stat }) &&
				!slices.ContainsFunc(extra[m.idx], func(s trendStat) bool { return s.name == th.stat }) {
				if ts, err := parseStats([]string{th.stat}); err == nil {
					extra[m.idx] = append(extra[m.idx], ts[0])
				}
			}
		}
	}
	return ths, extra
}
