package stagereport

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/stats"
)

// LatencyChart is the latency-distribution chart: one box per endpoint
// over its selected-status samples, the box from p25 to p75 with a line
// at the median and whiskers from p5 to p99.
func (r *StageReport) LatencyChart() (chart.Chart, error) {
	c := chart.Chart{
		Title:  fmt.Sprintf("Latency distribution (http_req_duration, status %s)", r.Status),
		XLabel: "endpoint (whiskers p5-p99, box p25-p75)", YLabel: "ms",
	}
	for _, e := range r.Endpoints {
		if len(e.Latencies) == 0 {
			continue // an endpoint with no selected samples has no box
		}
		s := append([]float64(nil), e.Latencies...)
		sort.Float64s(s)
		c.Categories = append(c.Categories, e.Name)
		c.Boxes = append(c.Boxes, chart.Box{
			Low: stats.Quantile(s, 0.05), Q1: stats.Quantile(s, 0.25), Median: stats.Quantile(s, 0.5),
			Q3: stats.Quantile(s, 0.75), High: stats.Quantile(s, 0.99),
		})
	}
	if len(c.Categories) == 0 {
		return c, fmt.Errorf("no status-%s samples to chart", r.Status)
	}
	return c, c.Validate()
}

// WriteStageReport writes the Markdown report to mdPath and its chart in
// light and dark to charts/{light,dark}/latency-distribution.png beside
// it, the paths the Markdown's <picture> element names.
func WriteStageReport(r *StageReport, mdPath string) error {
	c, err := r.LatencyChart()
	if err != nil {
		return err
	}
	dir := filepath.Join(filepath.Dir(mdPath), "charts")
	if _, err := chart.WriteThemed(c, dir, "latency-distribution"); err != nil {
		return fmt.Errorf("latency chart: %w", err)
	}
	f, err := os.Create(mdPath)
	if err != nil {
		return err
	}
	if err := r.WriteMarkdown(f); err != nil {
		_ = f.Close() // the write error is the one to report
		return err
	}
	return f.Close()
}
