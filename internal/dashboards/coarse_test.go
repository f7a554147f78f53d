package dashboards

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

// A quantile from k6's default explicit OTLP buckets is not presented as
// k6's: every dashboard with a quantile panel marks the time such
// streams are held (the exporter's explicit-bucket series), and every
// quantile panel says what the mark means.
func TestQuantilePanelsSayWhenBucketsAreCoarse(t *testing.T) {
	for variant, boards := range allVariants(t) {
		for file, m := range boards {
			quantilePanels := 0
			for _, p := range panels(m) {
				ts, _ := p["targets"].([]any)
				quantile := false
				for _, tg := range ts {
					if e, _ := tg.(map[string]any)["expr"].(string); strings.Contains(e, "histogram_quantile(") {
						quantile = true
					}
				}
				if !quantile {
					continue
				}
				quantilePanels++
				if d, _ := p["description"].(string); !strings.Contains(d, coarseAnnotationName) {
					t.Errorf("%s %s: quantile panel %q does not say when its quantiles are coarse: %q", variant, file, p["title"], d)
				}
			}
			marked := false
			for _, a := range m["annotations"].(map[string]any)["list"].([]any) {
				am := a.(map[string]any)
				if e, _ := am["expr"].(string); am["name"] == coarseAnnotationName && strings.Contains(e, catalogue.ExporterOTLPExplicitStreams.Name) {
					marked = true
				}
			}
			if quantilePanels > 0 && !marked {
				t.Errorf("%s %s: %d quantile panels, no %q annotation on %s", variant, file, quantilePanels, coarseAnnotationName, catalogue.ExporterOTLPExplicitStreams.Name)
			}
		}
	}
}
