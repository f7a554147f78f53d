package dashboards

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	variants "github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// gridWidth is Grafana's grid: every line of panels fits in 24 columns.
const gridWidth = 24

// ds is the datasource every panel and query uses: the dashboard's
// `datasource` variable, so one JSON works against any Prometheus.
var ds = dashboard.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// target is one query of a panel. RefIds are assigned in order (A, B, ...).
type target struct {
	Expr   string
	Legend string
	// Instant asks for one value at the end of the range (tables, stats).
	Instant bool
	// Table formats the result as a table (one row per series).
	Table bool
	// Heatmap formats native or classic buckets for the heatmap panel.
	Heatmap bool
}

func (t target) build(i int) *prometheus.DataqueryBuilder {
	q := prometheus.NewDataqueryBuilder().
		Datasource(ds).
		RefId(refID(i)).
		Expr(t.Expr).
		EditorMode(prometheus.QueryEditorModeCode)
	if t.Legend != "" {
		q.LegendFormat(t.Legend)
	}
	switch {
	case t.Heatmap:
		q.Format(prometheus.PromQueryFormatHeatmap).Range()
	case t.Table:
		q.Format(prometheus.PromQueryFormatTable)
		if t.Instant {
			q.Instant()
		} else {
			q.Range()
		}
	case t.Instant:
		q.Format(prometheus.PromQueryFormatTimeSeries).Instant()
	default:
		q.Format(prometheus.PromQueryFormatTimeSeries).Range()
	}
	return q
}

// refID names the i-th query: A..Z, then AA, AB, ...
func refID(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return refID(i/26-1) + string(rune('A'+i%26))
}

// cell is a laid-out element of a board: a row header or a panel.
type cell struct {
	row   *dashboard.RowBuilder
	panel cog.Builder[dashboard.Panel]
	pos   dashboard.GridPos
}

// board collects rows and panels in reading order and lays them out on
// the 24-column grid itself, so positions never depend on the SDK's
// auto-layout (which can overflow; see docs/dashboards.md).
type board struct {
	cells []cell
	x, y  uint32 // cursor
	lineH uint32 // height of the current line of panels
}

// row starts a full-width row header on a new line.
func (b *board) row(title string) {
	b.newline()
	b.cells = append(b.cells, cell{
		row: dashboard.NewRowBuilder(title).Collapsed(false),
		pos: dashboard.GridPos{X: 0, Y: b.y, W: gridWidth, H: 1},
	})
	b.y++
}

func (b *board) newline() {
	if b.x > 0 {
		b.y += b.lineH
	}
	b.x, b.lineH = 0, 0
}

// place puts a w×h panel at the cursor, wrapping to a new line when it
// would not fit. A width over 24 is a programming error reported by build.
func (b *board) place(w, h uint32, p cog.Builder[dashboard.Panel]) {
	if b.x+w > gridWidth {
		b.newline()
	}
	b.cells = append(b.cells, cell{panel: p, pos: dashboard.GridPos{X: b.x, Y: b.y, W: w, H: h}})
	b.x += w
	b.lineH = max(b.lineH, h)
	if b.x >= gridWidth {
		b.newline()
	}
}

// apply adds the board's rows and panels to d, then Build fixes ids and
// positions on the result (see finish).
func (b *board) apply(d *dashboard.DashboardBuilder) { //nolint:staticcheck // the v1 dashboard model is the JSON that file provisioning loads
	for _, c := range b.cells {
		if c.row != nil {
			d.WithRow(c.row)
		} else {
			d.WithPanel(c.panel)
		}
	}
}

// finish writes the board's explicit ids and grid positions into the
// built dashboard, in the order the cells were added. Ids start at 1 and
// are unique across rows and panels.
func (b *board) finish(m *dashboard.Dashboard) error { //nolint:staticcheck // the v1 dashboard model is the JSON that file provisioning loads
	if len(m.Panels) != len(b.cells) {
		return fmt.Errorf("dashboard %q: %d panels built, %d laid out", deref(m.Title), len(m.Panels), len(b.cells))
	}
	for i, c := range b.cells {
		if c.pos.X+c.pos.W > gridWidth {
			return fmt.Errorf("dashboard %q: panel %d is %d wide at x=%d, over %d columns", deref(m.Title), i+1, c.pos.W, c.pos.X, gridWidth)
		}
		pos := c.pos
		id := uint32(i + 1)
		switch p := m.Panels[i]; {
		case p.RowPanel != nil:
			p.RowPanel.Id = id
			p.RowPanel.GridPos = &pos
		case p.Panel != nil:
			p.Panel.Id = &id
			p.Panel.GridPos = &pos
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// panelSpec is what every panel carries: title, description, unit and
// queries. The unit and description are mandatory by convention and
// checked in tests.
type panelSpec struct {
	Title, Desc, Unit string
	Targets           []target
}

// coarseQuantiles is said on every panel that draws a histogram
// quantile: over OTLP with k6's default explicit buckets it is not k6's
// figure.
const coarseQuantiles = " Where the \"" + coarseAnnotationName + "\" annotation shows, a metric arrives over OTLP with k6's default explicit buckets " +
	"(15 bounds, e.g. 1000–2500 ms): its quantiles are then only as fine as those buckets, a p95 up to +48% from k6's own; " +
	"see the Exporter health dashboard and docs/exporter.md."

// description is the panel's description, with coarseQuantiles when
// one of its queries is a histogram quantile.
func (s panelSpec) description() string {
	for _, t := range s.Targets {
		if strings.Contains(t.Expr, "histogram_quantile(") {
			return s.Desc + coarseQuantiles
		}
	}
	return s.Desc
}

func (s panelSpec) queries() []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], len(s.Targets))
	for i, t := range s.Targets {
		out[i] = t.build(i)
	}
	return out
}

// timeseries adds a time series panel with a table legend (mean, max,
// last) and a shared tooltip, and returns it for panel-specific options.
func (b *board) timeseries(w, h uint32, s panelSpec) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().
		Title(s.Title).Description(s.description()).Unit(s.Unit).
		Datasource(ds).Targets(s.queries()).
		LineWidth(1).FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true).
			Calcs([]string{"mean", "max", "lastNotNull"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
	b.place(w, h, p)
	return p
}

// stat adds a single-value panel reduced with calc (lastNotNull, max, ...).
func (b *board) stat(w, h uint32, calc string, s panelSpec) *stat.PanelBuilder {
	p := stat.NewPanelBuilder().
		Title(s.Title).Description(s.description()).Unit(s.Unit).
		Datasource(ds).Targets(s.queries()).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{calc}).Values(false)).
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeValue).
		TextMode(common.BigValueTextModeAuto).
		JustifyMode(common.BigValueJustifyModeAuto).
		Orientation(common.VizOrientationAuto)
	b.place(w, h, p)
	return p
}

// table adds a table panel; its queries should be Instant+Table.
func (b *board) table(w, h uint32, s panelSpec) *table.PanelBuilder {
	p := table.NewPanelBuilder().
		Title(s.Title).Description(s.description()).Unit(s.Unit).
		Datasource(ds).Targets(s.queries()).
		ShowHeader(true).Filterable(true)
	b.place(w, h, p)
	return p
}

// heatmap adds a heatmap of pre-bucketed data (native or classic
// histogram buckets); Grafana does not re-bucket it.
func (b *board) heatmap(w, h uint32, s panelSpec) *heatmap.PanelBuilder {
	p := heatmap.NewPanelBuilder().
		Title(s.Title).Description(s.description()).Unit(s.Unit).
		Datasource(ds).Targets(s.queries()).
		Calculate(false).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Oranges").
			Scale(heatmap.HeatmapColorScaleExponential).
			Exponent(0.5).
			Steps(64)).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit(s.Unit)).
		CellValues(heatmap.NewCellValuesBuilder().Unit("reqps")).
		Tooltip(heatmap.NewHeatmapTooltipBuilder().Mode(common.TooltipDisplayModeSingle).YHistogram(true)).
		ShowLegend()
	b.place(w, h, p)
	return p
}

// step is one threshold: from value upwards, color.
type step struct {
	value float64
	color string
}

func at(v float64, color string) step { return step{v, color} }

// thresholds builds absolute threshold steps: the base colour below the
// first step, then each step's colour from its value up (sorted, since
// Grafana expects ascending steps).
func thresholds(base string, steps ...step) *dashboard.ThresholdsConfigBuilder {
	slices.SortStableFunc(steps, func(a, b step) int { return cmp.Compare(a.value, b.value) })
	ts := []dashboard.Threshold{{Value: nil, Color: base}}
	for _, s := range steps {
		ts = append(ts, dashboard.Threshold{Value: cog.ToPtr(s.value), Color: s.color})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(ts)
}

// bandOverrides styles a pair of envelope band series: dashed lines, the
// upper edge filled down to the lower one, so the band shows as a shaded
// corridor the live series must stay inside.
func bandOverrides(p *timeseries.PanelBuilder, lower, upper, color string) {
	dashed := dashboard.DynamicConfigValue{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}}
	col := dashboard.DynamicConfigValue{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": color}}
	p.OverrideByName(lower, []dashboard.DynamicConfigValue{dashed, col,
		{Id: "custom.fillOpacity", Value: 0}})
	p.OverrideByName(upper, []dashboard.DynamicConfigValue{dashed, col,
		{Id: "custom.fillBelowTo", Value: lower},
		{Id: "custom.fillOpacity", Value: 15}})
}

// fixedColor colours one series.
func fixedColor(p *timeseries.PanelBuilder, name, color string) {
	p.OverrideByName(name, []dashboard.DynamicConfigValue{
		{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": color}},
	})
}
