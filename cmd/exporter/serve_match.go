package main

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// warnUnexportedMatch warns about an envelope whose match needs a label
// serve does not export: k6 tags beyond the default labels become labels
// only with --k6.allow-tag, so such a match selects none of the series
// served here and the alerts scoped to it can never fire on them.
func warnUnexportedMatch(log *slog.Logger, envs []*envelope.Envelope, allow []string) {
	have := append(catalogue.DefaultK6Labels(), allow...)
	for _, env := range envs {
		ms, err := envelope.ParseMatch(env.Match)
		if err != nil {
			continue // refused when the file was read
		}
		for _, m := range ms {
			if !slices.Contains(have, m.Name) && !m.Matches("") {
				log.Warn("the envelope's match needs a k6 tag serve does not export, so it selects none of the series served here; add --k6.allow-tag "+m.Name,
					"envelope", env.Name, "match", env.Match)
				break
			}
		}
	}
}

// warnUnselected warns, once the finished results are replayed, about an
// envelope whose match selects none of the k6 series served, naming the
// testids served.
func warnUnselected(log *slog.Logger, envs []*envelope.Envelope, g prometheus.Gatherer) {
	mfs, err := g.Gather()
	if err != nil {
		return
	}
	type set = map[string]string
	var series []set
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), catalogue.K6Namespace+"_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			s := set{}
			for _, lp := range m.GetLabel() {
				s[lp.GetName()] = lp.GetValue()
			}
			series = append(series, s)
		}
	}
	if len(series) == 0 {
		return
	}
	for _, env := range envs {
		ms, err := envelope.ParseMatch(env.Match)
		if err != nil || len(ms) == 0 {
			continue
		}
		if slices.ContainsFunc(series, func(s set) bool { return matchesAll(ms, s) }) {
			continue
		}
		var ids []string
		for _, s := range series {
			if id := s["testid"]; id != "" && !slices.Contains(ids, id) && len(ids) < 5 {
				ids = append(ids, id)
			}
		}
		log.Warn("the envelope's match selects none of the k6 series replayed, so its alerts cannot fire on them; tag the runs to match or change the envelope's match",
			"envelope", env.Name, "match", env.Match, "series", len(series), "testids", strings.Join(ids, ","))
	}
}

func matchesAll(ms []*labels.Matcher, s map[string]string) bool {
	for _, m := range ms {
		if !m.Matches(s[m.Name]) {
			return false
		}
	}
	return true
}
