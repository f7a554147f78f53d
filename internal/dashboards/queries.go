package dashboards

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Query is one PromQL expression of a dashboard and where it sits.
type Query struct {
	Where string // file, panel id and title, refId (or annotation, variable)
	Expr  string // as Grafana holds it, variables unreplaced
}

// Queries lists every PromQL expression of a dashboard as Grafana reads
// it: panel targets (panels nested in rows included), annotations, and
// query variables (label_values(...) unwrapped to its series selector).
// End-to-end tests run them against a query endpoint, after Substitute.
func Queries(d Dashboard) ([]Query, error) {
	b, err := d.JSON()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", d.UID, err)
	}
	return modelQueries(d.File, m), nil
}

func modelQueries(file string, m map[string]any) []Query {
	var out []Query
	for _, p := range flatPanels(m) {
		ts, _ := p["targets"].([]any)
		for _, t := range ts {
			tm, _ := t.(map[string]any)
			if e, ok := tm["expr"].(string); ok {
				out = append(out, Query{fmt.Sprintf("%s panel %v %q ref %v", file, p["id"], p["title"], tm["refId"]), e})
			}
		}
	}
	ann, _ := m["annotations"].(map[string]any)
	list, _ := ann["list"].([]any)
	for _, a := range list {
		am, _ := a.(map[string]any)
		if e, ok := am["expr"].(string); ok {
			out = append(out, Query{fmt.Sprintf("%s annotation %q", file, am["name"]), e})
		}
	}
	tmpl, _ := m["templating"].(map[string]any)
	vars, _ := tmpl["list"].([]any)
	for _, v := range vars {
		vm, _ := v.(map[string]any)
		q, ok := vm["query"].(string)
		if vm["type"] != "query" || !ok {
			continue
		}
		inner := strings.TrimSuffix(strings.TrimPrefix(q, "label_values("), ")")
		if i := strings.LastIndex(inner, ","); i > 0 {
			inner = inner[:i]
		}
		out = append(out, Query{fmt.Sprintf("%s variable %q", file, vm["name"]), inner})
	}
	return out
}

// flatPanels lists a dashboard's panels, those nested in rows included.
func flatPanels(m map[string]any) []map[string]any {
	var out []map[string]any
	ps, _ := m["panels"].([]any)
	for _, p := range ps {
		pm, _ := p.(map[string]any)
		out = append(out, pm)
		inner, _ := pm["panels"].([]any)
		for _, q := range inner {
			qm, _ := q.(map[string]any)
			out = append(out, qm)
		}
	}
	return out
}

// varRef matches a Grafana variable reference: ${name} or $name.
var varRef = regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`)

// Substitute replaces the Grafana variables of expr that vals names by
// their values; other references stay ($1 in label_replace is PromQL's,
// not Grafana's).
func Substitute(expr string, vals map[string]string) string {
	return varRef.ReplaceAllStringFunc(expr, func(s string) string {
		if v, ok := vals[strings.Trim(s, "${}")]; ok {
			return v
		}
		return s
	})
}
