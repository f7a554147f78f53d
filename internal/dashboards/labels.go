package dashboards

import (
	"sort"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// endpointLabels maps the series names of the envelope's endpoints (the
// name tag value, or the endpoint's key, which k6 scripts usually give as
// the name tag too) to the display names the envelope gives them.
func endpointLabels(o Options) map[string]string {
	out := map[string]string{}
	if o.Envelope == nil {
		return out
	}
	for key, ep := range o.Envelope.Endpoints {
		if ep.Label == "" {
			continue
		}
		out[key] = ep.Label
		if ep.Tag == "name" && ep.Value != "" {
			out[ep.Value] = ep.Label
		}
	}
	return out
}

// labelSeries shows each endpoint series (legend "{{name}}" plus suffix)
// under its display name.
func labelSeries(p *timeseries.PanelBuilder, o Options, suffixes ...string) {
	labels := endpointLabels(o)
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	sort.Strings(names) // stable JSON
	for _, n := range names {
		for _, s := range append([]string{""}, suffixes...) {
			p.OverrideByName(n+s, []dashboard.DynamicConfigValue{{Id: "displayName", Value: labels[n] + s}})
		}
	}
}
