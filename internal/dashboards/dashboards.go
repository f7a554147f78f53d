// Package dashboards builds the Grafana dashboards for k6 load tests and
// their performance envelopes as Go code with the Grafana Foundation SDK:
// Overview, Endpoints, Runs, ECS and Exporter health.
//
// Every metric name comes from internal/catalogue (the series the
// exporter serves and the recording rules the rules pack records), so a
// renamed series breaks the build or the tests, never a dashboard in
// production. Envelope bands are drawn from the exporter's envelope
// gauges, so the same dashboards work for any envelope; Options.Envelope
// only adds fixed threshold lines and per-endpoint panels for an
// envelope's custom trend metrics.
//
// Conventions, checked by the tests: a `datasource` variable of type
// prometheus used by every panel and query; testid, scenario and endpoint
// variables from label_values; $__rate_interval; quantiles only from
// histogram_quantile over summed rates (never averaged); a unit and a
// description on every panel; explicit panel ids, refIds and grid
// positions within 24 columns; links between the dashboards; stable uids.
package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/envelope-dev/envelope/internal/catalogue"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/otlp"
)

// Options tune the generated dashboards.
type Options struct {
	// Envelope, when set, adds fixed thresholds: red where the alert
	// rules generated from it fire (rules.Calibrate), a neutral marker at
	// its band edges. The bands themselves come from the exporter's
	// envelope gauges either way.
	Envelope *envelope.Envelope

	// limits are Envelope's alert thresholds, calibrated once by Build.
	limits *limits
}

// Dashboard is one generated dashboard.
type Dashboard struct {
	UID   string
	Title string
	File  string              // file name in the output folder
	Model dashboard.Dashboard //nolint:staticcheck // the v1 dashboard model is the JSON that file provisioning loads
}

// JSON renders the dashboard as indented JSON with a trailing newline.
// encoding/json sorts map keys and keeps struct order, so the output is
// byte-stable.
func (d Dashboard) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d.Model); err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", d.UID, err)
	}
	return buf.Bytes(), nil
}

// Stable uids: links and bookmarks rely on them, so they never change.
const (
	UIDOverview  = "envelope-overview"
	UIDEndpoints = "envelope-endpoints"
	UIDRuns      = "envelope-runs"
	UIDECS       = "envelope-ecs"
	UIDExporter  = "envelope-exporter"
)

// tag groups the dashboards; the dashboards link lists everything with it.
const tag = "envelope"

type spec struct {
	uid, title, file, desc string
	vars                   []string // template variables besides datasource
	build                  func(*board, Options)
}

func specs() []spec {
	return []spec{
		{UIDOverview, "Envelope / Overview", "overview.json",
			"A k6 test against its performance envelope: throughput, iterations, errors, VUs and latency percentiles with the envelope bands, firing envelope alerts and test start/end annotations.",
			[]string{varEnvelope, varTestID, varScenario}, overview},
		{UIDEndpoints, "Envelope / Endpoints", "endpoints.json",
			"Per-endpoint (k6 name tag) request rate, errors and latency percentiles against the per-endpoint envelope bands, with a latency heatmap from the native histogram.",
			[]string{varEnvelope, varTestID, varScenario, varEndpoint, varTrend}, endpoints},
		{UIDRuns, "Envelope / Runs", "runs.json",
			"Run-by-run comparison over the selected time range: exact requests, RPS, p50/p95/p99 and error rate per testid against the envelope, and per-stage statistics for arrival-rate tests.",
			[]string{varEnvelope, varTestID, varScenario}, runs},
		{UIDECS, "Envelope / ECS", "ecs.json",
			"The service under test on AWS ECS: CPU and memory against limits, task counts and saturation, from the task metadata endpoint and CloudWatch. Rows stay empty until ECS series exist.",
			[]string{varEnvelope, varTestID, varScenario}, ecs},
		{UIDExporter, "Envelope / Exporter health", "exporter.json",
			"The envelope exporter itself: ingest rate, bad lines, lag, OTLP requests, series overflow and scrape duration.",
			nil, health},
	}
}

// Build returns every dashboard, in a fixed order.
func Build(opts Options) ([]Dashboard, error) {
	l, err := newLimits(opts.Envelope)
	if err != nil {
		return nil, err
	}
	opts.limits = l
	var out []Dashboard
	for _, s := range specs() {
		d, err := buildOne(s, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func buildOne(s spec, opts Options) (Dashboard, error) {
	b := &board{}
	s.build(b, opts)

	//nolint:staticcheck // the v1 dashboard model is the JSON that file provisioning loads
	d := dashboard.NewDashboardBuilder(s.title).
		Uid(s.uid).
		Description(s.desc).
		Tags([]string{tag, "k6"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		Refresh("30s").
		Link(dashboard.NewDashboardLinkBuilder("Envelope dashboards").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{tag}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true)).
		Annotation(dashboard.NewAnnotationQueryBuilder().
			Name("Annotations & Alerts").
			Datasource(dashboard.DataSourceRef{Type: cog.ToPtr("grafana"), Uid: cog.ToPtr("-- Grafana --")}).
			Type("dashboard").
			BuiltIn(1).
			Enable(true).
			Hide(true).
			IconColor("rgba(0, 211, 255, 1)"))
	if s.uid != UIDExporter && s.uid != UIDECS {
		d.Annotation(runAnnotation())
		d.Annotation(coarseAnnotation())
	}
	if s.uid == UIDOverview {
		d.Annotation(alertAnnotation())
	}
	d.WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
		Label("Data source").
		Type("prometheus").
		Regex("").
		AllowCustomValue(false))
	for _, v := range s.vars {
		d.WithVariable(variable(v))
	}
	b.apply(d)

	m, err := d.Build()
	if err != nil {
		return Dashboard{}, fmt.Errorf("dashboard %s: %w", s.uid, err)
	}
	if err := b.finish(&m); err != nil {
		return Dashboard{}, err
	}
	// Links default to the controls menu, where Grafana 12 tucks them
	// away; clearing the placement shows them in the dashboard bar.
	for i := range m.Links {
		m.Links[i].Placement = nil
	}
	for i := range m.Annotations.List {
		m.Annotations.List[i].Placement = nil
	}
	return Dashboard{UID: s.uid, Title: s.title, File: s.file, Model: m}, nil
}

// variable builds a multi-value query variable with an All option.
func variable(name string) *dashboard.QueryVariableBuilder {
	reqs := catalogue.HTTPReqs.Name
	var label, query string
	switch name {
	case varEnvelope:
		// One envelope at a time: its bands are drawn beside its tests.
		query := labelValues(catalogue.EnvelopeInfo.Name, "envelope")
		return dashboard.NewQueryVariableBuilder(name).
			Label("Envelope").
			Datasource(ds).
			Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
			Definition(query).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortNaturalAsc)
	case varTestID:
		// The tests the selected envelope's rules matched: its recorded
		// throughput carries the envelope label and each matched testid.
		label, query = "Test ID", labelValues(fmt.Sprintf(`%s{%s}`, catalogue.RecThroughput, envelopeMatcher), "testid")
	case varScenario:
		label, query = "Scenario", labelValues(reqs+`{testid=~"$testid"}`, "scenario")
	case varEndpoint:
		label, query = "Endpoint", labelValues(reqs+`{testid=~"$testid", scenario=~"$scenario"}`, endpointLabel)
	case varTrend:
		label, query = "Custom trend", labelValues(fmt.Sprintf(`%s{%s, endpoint!="", metric!=%q}`,
			catalogue.EnvelopeLatencyMax.Name, envelopeMatcher, catalogue.HTTPReqDuration.Name), "metric")
	}
	v := dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(ds).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Multi(true).
		IncludeAll(true).
		AllValue(".*").
		Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
			Value: dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
		})
	if name == varTestID {
		// Newest runs first when testids carry dates or counters.
		v.Sort(dashboard.VariableSortNaturalDesc)
	} else {
		v.Sort(dashboard.VariableSortNaturalAsc)
	}
	return v
}

// runAnnotation marks each testid's run as a region from its first to its
// last request: the series exists exactly while requests flow.
func runAnnotation() *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().
		Name("Test runs").
		Datasource(ds).
		Enable(true).
		IconColor("#8AB8FF").
		Expr(runningExpr()).
		TitleFormat("k6 test {{testid}}").
		TextFormat("testid {{testid}} running").
		TagKeys("testid").
		Step("15s")
}

// coarseAnnotationName names the annotation coarseAnnotation draws.
const coarseAnnotationName = "Coarse OTLP buckets"

// coarseAnnotation marks the time OTLP histograms with explicit buckets
// (k6's default aggregation) are held, per k6 metric: quantiles drawn
// then are only as fine as those buckets.
func coarseAnnotation() *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().
		Name(coarseAnnotationName).
		Datasource(ds).
		Enable(true).
		IconColor("orange").
		Expr(coarseExpr()).
		TitleFormat("coarse quantiles: {{metric}}").
		TextFormat("{{metric}} arrives over OTLP with k6's default explicit buckets: its quantiles are only as fine as those buckets, not k6's own. " +
			"Give k6 " + otlp.ExponentialSetting + " for exponential buckets.").
		TagKeys("metric").
		Step("15s")
}

// coarseExpr is the k6 metrics held with explicit OTLP buckets.
func coarseExpr() string {
	return fmt.Sprintf("sum by (metric) (%s) > 0", catalogue.ExporterOTLPExplicitStreams.Name)
}

// alertAnnotation marks when envelope alerts fired.
func alertAnnotation() *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().
		Name("Envelope alerts").
		Datasource(ds).
		Enable(true).
		IconColor("red").
		Expr(firingAlerts()).
		TitleFormat("{{alertname}}").
		TextFormat("{{alertname}} firing (severity {{severity}}, testid {{testid}})").
		TagKeys("alertname,severity,testid").
		Step("15s")
}

func runningExpr() string {
	return fmt.Sprintf("%s > 0", rate(catalogue.HTTPReqs, []string{"testid"}))
}

// WriteDir writes every dashboard into dir as <file>.json.
func WriteDir(dir string, opts Options) ([]string, error) {
	ds, err := Build(opts)
	if err != nil {
		return nil, err
	}
	h, err := BuildHistory(opts.Envelope)
	if err != nil {
		return nil, err
	}
	ds = append(ds, h)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, d := range ds {
		b, err := d.JSON()
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, filepath.FromSlash(d.File))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}
