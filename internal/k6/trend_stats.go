package k6

import (
	"fmt"
	"strconv"
	"strings"
)

// trendStat is one parsed k6 trend stat name.
type trendStat struct {
	name string
	p    float64 // for med and p(N): the quantile in [0,1]; -1 otherwise
}

// parseStats checks k6 trend stat names: avg, min, med, max, count, p(N)
// with N in [0,100].
func parseStats(names []string) ([]trendStat, error) {
	out := make([]trendStat, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch n {
		case "avg", "min", "max", "count":
			out = append(out, trendStat{n, -1})
			continue
		case "med":
			out = append(out, trendStat{n, 0.5})
			continue
		}
		if strings.HasPrefix(n, "p(") && strings.HasSuffix(n, ")") {
			v, err := strconv.ParseFloat(n[2:len(n)-1], 64)
			if err == nil && v >= 0 && v <= 100 {
				out = append(out, trendStat{n, v / 100})
				continue
			}
		}
		return nil, fmt.Errorf("unknown trend stat %q (want avg, min, med, max, count or p(N) with N in 0..100)", n)
	}
	return out, nil
}

// ParseStats splits and checks a --summary-trend-stats style list.
func ParseStats(list string) ([]string, error) {
	var names []string
	for s := range strings.SplitSeq(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			names = append(names, s)
		}
	}
	if _, err := parseStats(names); err != nil {
		return nil, err
	}
	return names, nil
}
