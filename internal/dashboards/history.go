package dashboards

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	variants "github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

// UIDHistory is the Run history dashboard's uid.
const UIDHistory = "envelope-history"

// HistoryFile is where the Run history dashboard is written, under the
// dashboards folder: a folder of its own, because it needs a PostgreSQL
// data source that the Prometheus deploy files do not provision (they
// provision the folder's top-level dashboards).
const HistoryFile = "history/run-history.json"

// pgType is Grafana's built-in PostgreSQL data source.
const pgType = "grafana-postgresql-datasource"

// pgDS is the data source of every history panel: the dashboard's
// `datasource` variable, so one JSON works against any run history.
var pgDS = dashboard.DataSourceRef{Type: cog.ToPtr(pgType), Uid: cog.ToPtr("${datasource}")}

// sqlQuery is a raw SQL query of Grafana's PostgreSQL data source, built
// as the SDK's data queries are (the SDK has no SQL query type).
type sqlQuery struct {
	refID, rawSQL, format string
}

func (q sqlQuery) Build() (variants.Dataquery, error) {
	return variants.UnknownDataquery{
		"refId": q.refID, "datasource": pgDS, "rawSql": q.rawSQL, "rawQuery": true,
		"format": q.format, "editorMode": "code",
	}, nil
}

// endpointValue is the SQL of the endpoint variable's value: the
// aggregate figures have an empty endpoint, shown as "aggregate".
const endpointValue = "(CASE WHEN '$endpoint' = 'aggregate' THEN '' ELSE '$endpoint' END)"

// runTime is a run's place in history: its commit time, else its run
// time, as `history show` orders runs.
const runTime = "COALESCE(r.commit_time, r.run_time)"

// seriesWhere selects the chosen figure of the main line's runs in the
// dashboard's time range; excluded runs are left out, as analysis does.
var (
	seriesCond = `r.test = '$test' AND f.endpoint = ` + endpointValue + ` AND f.figure = '$figure'
  AND (r.branch = '$branch' OR r.branch = '') AND NOT r.excluded
  AND $__timeFilter(` + runTime + `)`
	seriesJoin  = "figures f JOIN runs r ON r.id = f.run_id"
	seriesWhere = "FROM " + seriesJoin + "\nWHERE " + seriesCond
)

// HistoryQueries are every SQL query of the Run history dashboard,
// panels' and variables', for tests that run them.
func HistoryQueries(d Dashboard) []string {
	var out []string
	for _, v := range d.Model.Templating.List {
		if v.Type == dashboard.VariableTypeQuery && v.Query != nil && v.Query.String != nil {
			out = append(out, *v.Query.String)
		}
	}
	for _, p := range d.Model.Panels {
		if p.Panel == nil {
			continue
		}
		for _, t := range p.Panel.Targets {
			if q, ok := t.(variants.UnknownDataquery); ok {
				out = append(out, q["rawSql"].(string))
			}
		}
	}
	return out
}

// BuildHistory builds the Run history dashboard over a run history in
// PostgreSQL: the chosen figure by commit with each run's order-statistic
// interval, the envelope band from env's figures when given, and the
// runs with their metadata.
func BuildHistory(env *envelope.Envelope) (Dashboard, error) {
	b := &board{}
	historyPanels(b, env)
	//nolint:staticcheck // the v1 dashboard model is the JSON that file provisioning loads
	d := dashboard.NewDashboardBuilder("Envelope / Run history").
		Uid(UIDHistory).
		Description("Every recorded run of a test by commit (envelope history, PostgreSQL): one figure, aggregate or per endpoint, across commits with each run's interval and the envelope band, and the runs' metadata.").
		Tags([]string{tag, "k6", "history"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Time("now-90d", "now").
		Timezone(common.TimeZoneBrowser).
		Link(dashboard.NewDashboardLinkBuilder("Envelope dashboards").
			Type(dashboard.DashboardLinkTypeDashboards).Tags([]string{tag}).AsDropdown(true).KeepTime(false))
	d.WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Run history").Type(pgType).Regex("").AllowCustomValue(false))
	for _, v := range []struct{ name, label, query string }{
		{"test", "Test", "SELECT DISTINCT test FROM runs ORDER BY 1"},
		{"endpoint", "Endpoint", "SELECT DISTINCT CASE WHEN f.endpoint = '' THEN 'aggregate' ELSE f.endpoint END FROM figures f JOIN runs r ON r.id = f.run_id WHERE r.test = '$test' ORDER BY 1"},
		{"figure", "Figure", "SELECT DISTINCT f.figure FROM figures f JOIN runs r ON r.id = f.run_id WHERE r.test = '$test' AND f.endpoint = " + endpointValue + " ORDER BY 1"},
	} {
		d.WithVariable(dashboard.NewQueryVariableBuilder(v.name).Label(v.label).Datasource(pgDS).
			Query(dashboard.StringOrMap{String: cog.ToPtr(v.query)}).Definition(v.query).
			Refresh(dashboard.VariableRefreshOnDashboardLoad).Sort(dashboard.VariableSortAlphabeticalAsc))
	}
	d.WithVariable(dashboard.NewTextBoxVariableBuilder("branch").Label("Main branch").DefaultValue(dashboard.StringOrMap{String: cog.ToPtr("main")}).
		Current(dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: cog.ToPtr("main")}, Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("main")}}).
		Description("The main line: this branch's runs and those of no known branch."))
	b.apply(d)
	m, err := d.Build()
	if err != nil {
		return Dashboard{}, fmt.Errorf("dashboard %s: %w", UIDHistory, err)
	}
	if err := b.finish(&m); err != nil {
		return Dashboard{}, err
	}
	for i := range m.Links {
		m.Links[i].Placement = nil
	}
	return Dashboard{UID: UIDHistory, Title: "Envelope / Run history", File: HistoryFile, Model: m}, nil
}

// historyPanels lays out the Run history dashboard.
func historyPanels(b *board, env *envelope.Envelope) {
	targets := []cog.Builder[variants.Dataquery]{
		sqlQuery{"A", `SELECT ` + runTime + ` AS "time", f.value AS "$figure" ` + seriesWhere + ` ORDER BY 1`, "time_series"},
		sqlQuery{"B", `SELECT ` + runTime + ` AS "time", f.ci_low AS "interval low", f.ci_high AS "interval high" ` + seriesWhere + ` AND f.ci_low IS NOT NULL ORDER BY 1`, "time_series"},
	}
	band := envelopeBands(env)
	if band != "" {
		targets = append(targets, sqlQuery{"C", `WITH band (endpoint, figure, low, high) AS (VALUES ` + band + `)
SELECT ` + runTime + ` AS "time", band.low AS "envelope min", band.high AS "envelope max"
FROM band, ` + seriesJoin + `
WHERE ` + seriesCond + ` AND band.endpoint = f.endpoint AND band.figure = f.figure ORDER BY 1`, "time_series"})
	}
	ts := timeseries.NewPanelBuilder().
		Title("$figure of $endpoint by commit").
		Description("Each main-line run's value of the figure at its commit time (its run time where the commit's is unknown), with the run's order-statistic interval of p95/p99 where its file had points, and the envelope band where the dashboard was generated with an envelope.").
		Unit("none").Datasource(pgDS).Targets(targets).
		LineWidth(1).FillOpacity(0).PointSize(6).
		ShowPoints(common.VisibilityModeAlways).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom).ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderNone))
	bandOverrides(ts, "interval low", "interval high", "blue")
	if band != "" {
		bandOverrides(ts, "envelope min", "envelope max", "green")
	}
	b.place(18, 10, ts)
	b.place(6, 10, stat.NewPanelBuilder().
		Title("Main-line runs").
		Description("How many main-line runs of the test have the figure in the time range (excluded runs left out).").
		Unit("none").Datasource(pgDS).
		Targets([]cog.Builder[variants.Dataquery]{sqlQuery{"A", `SELECT now() AS "time", COUNT(*) AS "runs" ` + seriesWhere, "time_series"}}).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)).
		GraphMode(common.BigValueGraphModeNone).ColorMode(common.BigValueColorModeNone))
	b.place(24, 12, table.NewPanelBuilder().
		Title("Runs of $test").
		Description("Every run of the test in the time range, all branches, newest first, with its metadata and its value of the figure; excluded runs show their reason.").
		Unit("none").Datasource(pgDS).
		Targets([]cog.Builder[variants.Dataquery]{sqlQuery{"A", `SELECT ` + runTime + ` AS "time", r.commit_id AS "commit", r.branch, r.version, r.testid,
  f.value AS "$figure", f.count AS "samples", f.ci_low AS "interval low", f.ci_high AS "interval high",
  r.vus AS "VUs", r.duration_s AS "duration (s)", r.source_file AS "source", r.note, r.exclude_reason AS "excluded"
FROM runs r LEFT JOIN figures f ON f.run_id = r.id AND f.endpoint = ` + endpointValue + ` AND f.figure = '$figure'
WHERE r.test = '$test' AND $__timeFilter(` + runTime + `)
ORDER BY 1 DESC`, "table"}}).
		ShowHeader(true).Filterable(true))
}

// envelopeBands are env's band of each figure as SQL VALUES rows
// (endpoint, figure, low, high), aggregate (empty endpoint) and per
// endpoint; empty without an envelope.
func envelopeBands(env *envelope.Envelope) string {
	if env == nil {
		return ""
	}
	var rows []string
	add := func(k figures.Key, lo, hi float64) {
		rows = append(rows, fmt.Sprintf("('%s', '%s', %s, %s)", strings.ReplaceAll(k.Endpoint, "'", "''"), k.Figure,
			strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64)))
	}
	names := make([]string, 0, len(env.Endpoints))
	for n := range env.Endpoints {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, ep := range append([]string{""}, names...) {
		for _, n := range figures.Names() {
			k := figures.Key{Endpoint: ep, Figure: n}
			if lo, hi, ok := env.Range(k); ok {
				add(k, lo, hi)
			}
		}
	}
	return strings.Join(rows, ",\n  ")
}
