package exporter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A CSV has no Metric lines, so a custom metric's type is the loader's
// inference (a trend). Replaying it must serve the metric, as summarize
// shows it, rather than count every sample as an unknown metric.
func TestReplayCSVServesCustomMetrics(t *testing.T) {
	csv := "metric_name,timestamp,metric_value,check,error,error_code,expected_response,group,method,name,proto,scenario,service,status,subproto,tls_version,url,extra_tags,metadata\n" +
		"http_reqs,1796028664,1.000000,,,,true,::home page,GET,home,HTTP/1.0,arrival,,200,,,home,,\n" +
		"custom_waiting_time,1796028664,1.018509,,,,,::home page,,,,arrival,,,,,,scenario_kind=open&page=home,\n" +
		"custom_waiting_time,1796028665,2.500000,,,,,::home page,,,,arrival,,,,,,scenario_kind=open&page=home,\n"
	path := filepath.Join(t.TempDir(), "run.csv")
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	s := goldenServer(t, Config{})
	n, err := s.ReplayFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("points = %d, want 3", n)
	}
	if got := testutil.ToFloat64(s.bad.WithLabelValues(SourceResults, "unknown_metric")); got != 0 {
		t.Errorf("unknown_metric = %v, want 0", got)
	}
	mfs, err := s.K6Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "k6_custom_waiting_time") {
			found = true
			if c := mf.GetMetric()[0].GetHistogram().GetSampleCount(); c != 2 {
				t.Errorf("%s sample count = %d, want 2", mf.GetName(), c)
			}
		}
	}
	if !found {
		t.Error("custom_waiting_time not served")
	}
}
