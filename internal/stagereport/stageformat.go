package stagereport

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/envelope-dev/envelope/internal/k6options"
)

// Params are the report's extra settings from a small YAML file:
//
//	title: Benchmark Report
//	region: us-east-1
//	mode: per_endpoint
//	profile: default
//	settings:            # more rows of the k6 Settings table, in order
//	  Max delay query value: 0ms
//	stack:               # Stack Parameters table, in order
//	  BenchmarkHandlerMemorySize: 256
//	notes:
//	  - Handlers call a backend with 80-160 ms delay.
//	max_delay: 0ms       # header line "Max delay"
//	endpoints: [steady, adaptive, target-aware, standard]  # report order
//	sections:            # free sections, in order: text or a list
//	  Lambda Configuration: _Not captured for this run._
type Params struct {
	Title     string
	Region    string
	Mode      string
	Profile   string
	MaxDelay  string
	Endpoints []string
	Settings  []KV
	Stack     []KV
	Notes     []string
	Sections  []Section
}

// Section is a free section of the configuration: a paragraph or a list.
type Section struct {
	Title string
	Text  string
	Items []string
}

// paramFields are the fields a Params file may hold.
const paramFields = "title, region, mode, profile, max_delay, endpoints, settings, stack, notes, sections"

// KV is one ordered key and value.
type KV struct{ Key, Value string }

// LoadParams reads a Params YAML file; errors name the file, line and
// field.
func LoadParams(path string) (*Params, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p := &Params{}
	if len(doc.Content) == 0 {
		return p, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a mapping of %s", path, root.Line, paramFields)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		scalar := func(dst *string) error {
			if v.Kind != yaml.ScalarNode {
				return fmt.Errorf("%s:%d: field %s: want a single value", path, v.Line, k.Value)
			}
			*dst = v.Value
			return nil
		}
		pairs := func(dst *[]KV) error {
			if v.Kind != yaml.MappingNode {
				return fmt.Errorf("%s:%d: field %s: want a mapping of name: value", path, v.Line, k.Value)
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				if v.Content[j+1].Kind != yaml.ScalarNode {
					return fmt.Errorf("%s:%d: field %s.%s: want a single value", path, v.Content[j+1].Line, k.Value, v.Content[j].Value)
				}
				*dst = append(*dst, KV{v.Content[j].Value, v.Content[j+1].Value})
			}
			return nil
		}
		var err error
		switch k.Value {
		case "title":
			err = scalar(&p.Title)
		case "region":
			err = scalar(&p.Region)
		case "mode":
			err = scalar(&p.Mode)
		case "profile":
			err = scalar(&p.Profile)
		case "settings":
			err = pairs(&p.Settings)
		case "stack":
			err = pairs(&p.Stack)
		case "max_delay", "max delay", "Max delay":
			err = scalar(&p.MaxDelay)
		case "notes", "endpoints":
			dst := &p.Notes
			if k.Value == "endpoints" {
				dst = &p.Endpoints
			}
			if err = list(path, k.Value, v, dst); err != nil {
				return nil, err
			}
		case "sections":
			if v.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("%s:%d: field sections: want a mapping of section title: text or list", path, v.Line)
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				t, body := v.Content[j], v.Content[j+1]
				sec := Section{Title: t.Value}
				switch body.Kind {
				case yaml.ScalarNode:
					sec.Text = body.Value
				case yaml.SequenceNode:
					if err := list(path, "sections."+t.Value, body, &sec.Items); err != nil {
						return nil, err
					}
				default:
					return nil, fmt.Errorf("%s:%d: field sections.%s: want text or a list", path, body.Line, t.Value)
				}
				p.Sections = append(p.Sections, sec)
			}
		default:
			err = fmt.Errorf("%s:%d: unknown field %q (want %s)", path, k.Line, k.Value, paramFields)
		}
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// list reads a YAML list of single values.
func list(path, field string, v *yaml.Node, dst *[]string) error {
	if v.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s:%d: field %s: want a list", path, v.Line, field)
	}
	for _, n := range v.Content {
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s:%d: field %s: want a list of single values", path, n.Line, field)
		}
		*dst = append(*dst, n.Value)
	}
	return nil
}

// chartPaths are the chart images the Markdown links to, relative to the
// report file.
var chartPaths = struct{ Light, Dark string }{"charts/light/latency-distribution.png", "charts/dark/latency-distribution.png"}

// WriteMarkdown writes the report in the layout of a benchmark report:
// configuration, key findings, ranking, stage latency stats, chart.
func (r *StageReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	p := r.Params
	if p == nil {
		p = &Params{}
	}
	names := make([]string, len(r.Endpoints))
	for i, e := range r.Endpoints {
		names[i] = e.Name
	}
	r.mdHeader(&b, p, names)
	b.WriteString("## Test Configuration\n\n")
	if p.Region != "" {
		fmt.Fprintf(&b, "Region: `%s`\n\n", p.Region)
	}
	unit := "rps"
	if len(r.Windows) > 0 {
		unit = r.Windows[0].Unit
	}
	r.mdWorkload(&b, unit)
	r.mdSettings(&b, p, names)
	r.mdFindings(&b)
	r.mdRanking(&b)
	r.mdStages(&b, unit)
	b.WriteString("\n\n## Charts\n\n### Latency distribution\n\n")
	fmt.Fprintf(&b, "<picture>\n  <source media=\"(prefers-color-scheme: dark)\" srcset=\"%s\">\n  <source media=\"(prefers-color-scheme: light)\" srcset=\"%s\">\n  <img alt=\"Latency distribution\" src=\"%s\">\n</picture>\n",
		chartPaths.Dark, chartPaths.Light, chartPaths.Light)
	_, err := io.WriteString(w, b.String())
	return err
}

// mdHeader writes the title and the run's one-line facts.
func (r *StageReport) mdHeader(b *strings.Builder, p *Params, names []string) {
	title := p.Title
	if title == "" {
		title = "Benchmark Report"
	}
	fmt.Fprintf(b, "# %s\n\n", title)
	fmt.Fprintf(b, "Executor: %s\n", r.Executor)
	if p.Mode != "" {
		fmt.Fprintf(b, "Mode: %s\n", p.Mode)
	}
	if p.MaxDelay != "" {
		fmt.Fprintf(b, "Max delay: %s\n", p.MaxDelay)
	}
	fmt.Fprintf(b, "Endpoints: %s\n\n", strings.Join(names, ", "))
}

// mdWorkload writes the stage windows.
func (r *StageReport) mdWorkload(b *strings.Builder, unit string) {
	b.WriteString("### Workload Shape\n\n")
	if r.PerScenario {
		fmt.Fprintf(b, "The scenarios' stages differ, so each sample is windowed by the stages of its own scenario (its `scenario` tag).\n\n")
		fmt.Fprintf(b, "| Scenario | Stage | Window | Duration | From %s | To %s |\n| :-- | ---: | :-- | :-- | ---: | ---: |\n", unit, unit)
		for _, sc := range r.Scenarios {
			for _, w := range sc.Windows() {
				fmt.Fprintf(b, "| %s | %d | %ss | %s | %s | %s |\n", sc.Name, w.Stage, fmtWindow(w), fmtDur(w.Duration()), num(w.From), num(w.To))
			}
		}
	} else {
		if len(r.Scenarios) > 1 {
			fmt.Fprintf(b, "%d scenarios (%s) run these stages in parallel; one set of windows serves them all.\n\n", len(r.Scenarios), scenarioNames(r.Scenarios))
		}
		fmt.Fprintf(b, "| Stage | Window | Duration | From %s | To %s |\n| ---: | :-- | :-- | ---: | ---: |\n", unit, unit)
		for _, w := range r.Windows {
			fmt.Fprintf(b, "| %d | %ss | %s | %s | %s |\n", w.Stage, fmtWindow(w), fmtDur(w.Duration()), num(w.From), num(w.To))
		}
	}
}

// mdSettings writes the k6 settings, endpoints and the given parameters.
func (r *StageReport) mdSettings(b *strings.Builder, p *Params, names []string) {
	b.WriteString("\n### k6 Settings\n\n| Setting | Value |\n| :-- | :-- |\n")
	row := func(k, v string) { fmt.Fprintf(b, "| %s | `%s` |\n", k, v) }
	sc := r.Scenario
	row("Executor", r.Executor)
	if p.Mode != "" {
		row("Mode", p.Mode)
	}
	if p.Profile != "" {
		row("Profile", p.Profile)
	}
	if len(r.Scenarios) > 1 {
		row("Scenarios", scenarioNames(r.Scenarios))
	} else {
		row("Scenario", sc.Name)
	}
	var sched time.Duration
	for _, s := range r.Scenarios {
		sched = max(sched, s.ScheduledDuration())
	}
	if len(r.Scenarios) == 0 {
		sched = sc.ScheduledDuration()
	}
	row("Total scheduled duration", secs(sched)+"s")
	if sc.Arrival() {
		row("Arrival time unit", fmtDur(sc.TimeUnit))
		if sc.PreAllocatedVUs > 0 {
			row("Pre-allocated VUs", strconv.Itoa(sc.PreAllocatedVUs))
		}
		if sc.MaxVUs > 0 {
			row("Max VUs", strconv.Itoa(sc.MaxVUs))
		}
	}
	row("Endpoint tag", r.GroupBy)
	for _, kv := range p.Settings {
		row(kv.Key, kv.Value)
	}
	b.WriteString("\n### Endpoint Labels\n\n| Endpoint |\n| :-- |\n")
	for _, n := range names {
		fmt.Fprintf(b, "| %s |\n", n)
	}
	if len(p.Stack) > 0 {
		b.WriteString("\n### Stack Parameters\n\n| Parameter | Value |\n| :-- | :-- |\n")
		for _, kv := range p.Stack {
			row(kv.Key, kv.Value)
		}
	}
	for _, sec := range p.Sections {
		fmt.Fprintf(b, "\n### %s\n\n", sec.Title)
		if sec.Text != "" {
			fmt.Fprintf(b, "%s\n", sec.Text)
		}
		for _, it := range sec.Items {
			fmt.Fprintf(b, "- %s\n", it)
		}
	}
	if len(p.Notes) > 0 {
		b.WriteString("\n### Benchmark Scenario Notes\n\n")
		for _, n := range p.Notes {
			fmt.Fprintf(b, "- %s\n", n)
		}
	}
}

// mdFindings writes the key findings and data notes.
func (r *StageReport) mdFindings(b *strings.Builder) {
	b.WriteString("\n## Key Findings\n\n")
	for _, f := range r.Findings {
		fmt.Fprintf(b, "- %s\n", f)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n### Data Notes\n\n")
		for _, wn := range r.Warnings {
			fmt.Fprintf(b, "- %s\n", wn)
		}
	}
}

// mdRanking writes the endpoint ranking.
func (r *StageReport) mdRanking(b *strings.Builder) {
	b.WriteString("\n## Endpoint Ranking\n\n")
	b.WriteString(RankingRule + "\n\n")
	if r.Baseline != "" {
		fmt.Fprintf(b, "| Rank | Endpoint | p95 (ms) | Error rate | Cost (%% of %s) | Effective batch | Requests |\n| ---: | :-- | ---: | ---: | ---: | ---: | ---: |\n", r.Baseline)
	} else {
		b.WriteString("| Rank | Endpoint | p95 (ms) | Error rate | Requests |\n| ---: | :-- | ---: | ---: | ---: |\n")
	}
	for i, e := range r.Ranking {
		fmt.Fprintf(b, "| %d | %s | %.2f | %.3f%% |", i+1, e.Name, e.P95, 100*e.ErrorRate)
		if r.Baseline != "" {
			fmt.Fprintf(b, " %s | %s |", optf(e.CostPct), optf(e.EffectiveBatch))
		}
		fmt.Fprintf(b, " %d |\n", e.Requests)
	}
	if r.Baseline != "" {
		fmt.Fprintf(b, "\nCost is 100 × (%s's effective batch / the endpoint's effective batch); effective batch is the mean of the %s samples.\n", r.Baseline, r.BatchFrom)
	}
}

// mdStages writes each endpoint's stage latency table.
func (r *StageReport) mdStages(b *strings.Builder, unit string) {
	b.WriteString("\n## Stage Latency Stats (per endpoint)\n\n")
	if r.PerScenario {
		fmt.Fprintf(b, "Computed from sampled `http_req_duration` points with status `%s`, each grouped by the stage windows of its own scenario.\n", r.Status)
	} else {
		fmt.Fprintf(b, "Computed from sampled `http_req_duration` points with status `%s`, grouped by configured stage windows.\n", r.Status)
	}
	for _, e := range r.Endpoints {
		fmt.Fprintf(b, "\n### %s\n\n", e.Name)
		if r.PerScenario {
			b.WriteString("| Scenario ")
		}
		fmt.Fprintf(b, "| Stage | Target (%s) | Window (s) | Samples | Avg (ms) | p50 (ms) | p95 (ms) | p99 (ms) | Max (ms) |\n", unit)
		if r.PerScenario {
			b.WriteString("| :-- ")
		}
		b.WriteString("| ---: | ---: | :-- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, s := range e.Stages {
			if r.PerScenario {
				fmt.Fprintf(b, "| %s ", s.Scenario)
			}
			fmt.Fprintf(b, "| %d | %s | %s | %d |", s.Stage, num(s.Target), fmtWindow(s.Window), s.Samples)
			if s.Samples == 0 {
				b.WriteString(" _no samples_ | | | | |\n")
				continue
			}
			fmt.Fprintf(b, " %.2f | %.2f | %.2f | %.2f | %.2f |\n", *s.Avg, *s.P50, *s.P95, *s.P99, *s.Max)
		}
	}
}

// Stage report JSON shapes (milliseconds, ratios).
type (
	stageJSON struct {
		Executor  string                  `json:"executor"`
		Scenario  string                  `json:"scenario"`
		Start     time.Time               `json:"start"`
		GroupBy   string                  `json:"group_by"`
		Status    string                  `json:"status"`
		Windows   []windowJSON            `json:"windows"`
		Baseline  string                  `json:"baseline_endpoint,omitempty"`
		Ranking   []string                `json:"ranking"`
		Endpoints map[string]endpointJSON `json:"endpoints"`
		Findings  []string                `json:"findings"`
		Warnings  []string                `json:"warnings,omitempty"`
		// Scenarios whose stages window the run; PerScenario when each
		// sample was windowed by its own scenario's stages.
		Scenarios     []string `json:"scenarios,omitempty"`
		PerScenario   bool     `json:"per_scenario,omitempty"`
		EndpointOrder []string `json:"endpoint_order"`
	}
	windowJSON struct {
		Stage  int     `json:"stage"`
		StartS float64 `json:"start_s"`
		EndS   float64 `json:"end_s"`
		From   float64 `json:"from"`
		To     float64 `json:"to"`
		Unit   string  `json:"unit"`
	}
	endpointJSON struct {
		P95            float64      `json:"p95"`
		ErrorRate      float64      `json:"error_rate"`
		Requests       int64        `json:"requests"`
		EffectiveBatch *float64     `json:"effective_batch,omitempty"`
		CostPct        *float64     `json:"cost_pct,omitempty"`
		Stages         []stageJSON2 `json:"stages"`
	}
	stageJSON2 struct {
		Scenario string   `json:"scenario,omitempty"`
		StartS   float64  `json:"start_s"`
		EndS     float64  `json:"end_s"`
		Stage    int      `json:"stage"`
		Target   float64  `json:"target"`
		Samples  int      `json:"samples"`
		Avg      *float64 `json:"avg"`
		P50      *float64 `json:"p50"`
		P95      *float64 `json:"p95"`
		P99      *float64 `json:"p99"`
		Max      *float64 `json:"max"`
	}
)

// WriteJSON writes the report's figures; a stage without samples has
// "samples": 0 and null statistics.
func (r *StageReport) WriteJSON(w io.Writer) error {
	out := stageJSON{
		Executor: r.Executor, Scenario: r.Scenario.Name, Start: r.Start.UTC(), GroupBy: r.GroupBy, Status: r.Status,
		Baseline: r.Baseline, Endpoints: map[string]endpointJSON{}, Findings: r.Findings, Warnings: r.Warnings,
		Ranking: []string{},
	}
	if len(r.Scenarios) > 1 {
		for _, sc := range r.Scenarios {
			out.Scenarios = append(out.Scenarios, sc.Name)
		}
		out.PerScenario = r.PerScenario
	}
	for _, wd := range r.Windows {
		out.Windows = append(out.Windows, windowJSON{wd.Stage, wd.Start.Seconds(), wd.End.Seconds(), wd.From, wd.To, wd.Unit})
	}
	for _, e := range r.Ranking {
		out.Ranking = append(out.Ranking, e.Name)
	}
	for _, e := range r.Endpoints {
		ej := endpointJSON{P95: e.P95, ErrorRate: e.ErrorRate, Requests: e.Requests, EffectiveBatch: e.EffectiveBatch, CostPct: e.CostPct}
		for _, s := range e.Stages {
			ej.Stages = append(ej.Stages, stageJSON2{s.Scenario, s.Window.Start.Seconds(), s.Window.End.Seconds(), s.Stage, s.Target, s.Samples, s.Avg, s.P50, s.P95, s.P99, s.Max})
		}
		out.Endpoints[e.Name] = ej
		out.EndpointOrder = append(out.EndpointOrder, e.Name)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func optf(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *p)
}

// num prints a target without a needless fraction.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// secs prints a duration in seconds without a needless fraction.
func secs(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Milliseconds())/1000, 'f', -1, 64)
}

func fmtWindow(w k6options.Window) string { return secs(w.Start) + "-" + secs(w.End) }

// fmtDur prints 5m0s as 5m and 1h0m0s as 1h, as k6 scripts write them.
func fmtDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
