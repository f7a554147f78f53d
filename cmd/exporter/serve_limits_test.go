package main

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
	"github.com/envelope-dev/envelope/internal/exporter"
)

// Every limit flag of serve defaults to exporter.DefaultConfig, says in
// --help that 0 turns it off, and a negative value is refused with exit
// code 2: the flag's value goes to exporter.Config unchanged.
func TestServeLimitFlags(t *testing.T) {
	d := exporter.DefaultConfig()
	want := map[string]string{
		"k6.series-limit":          fmt.Sprint(d.SeriesLimit),
		"k6.metric-limit":          fmt.Sprint(d.MetricLimit),
		"k6.max-label-value-bytes": fmt.Sprint(d.MaxLabelValue),
		"k6.label-bytes-limit":     fmt.Sprint(d.LabelBytesLimit),
		"k6.series-ttl":            d.SeriesTTL.String(),
		"k6.native-max-buckets":    fmt.Sprint(d.NativeMaxBuckets),
		"k6.native-bucket-budget":  fmt.Sprint(d.NativeBucketBudget),
		"otlp.memory-budget-bytes": fmt.Sprint(d.OTLPMemoryBudget),
		"otlp.stream-limit":        fmt.Sprint(d.OTLPStreamLimit),
		"web.max-connections":      fmt.Sprint(d.MaxConnections),
		"web.max-requests":         fmt.Sprint(d.MaxRequests),
	}
	serve := newApp(io.Discard, io.Discard).GetCommand("serve")
	if serve == nil {
		t.Fatal("no serve command")
	}
	for _, f := range serve.Model().Flags {
		def, ok := want[f.Name]
		if !ok {
			continue
		}
		delete(want, f.Name)
		if got := strings.Join(f.Default, ","); got != def {
			t.Errorf("--%s defaults to %q, want exporter.DefaultConfig's %q", f.Name, got, def)
		}
		if !strings.Contains(f.Help, "0 = no limit") && !strings.Contains(f.Help, "0 = never") {
			t.Errorf("--%s help does not say what 0 means: %q", f.Name, f.Help)
		}
		neg := "-1"
		if f.Name == "k6.series-ttl" {
			neg = "-1s"
		}
		code, _, se := cmdlinetest.Capture(runCLI, "serve", "--web.listen-address=127.0.0.1:0", "--"+f.Name+"="+neg)
		if code != 2 || !strings.Contains(se, "0 means no limit") {
			t.Errorf("--%s=-1: exit %d, stderr %q; want 2 and a refusal", f.Name, code, se)
		}
	}
	for name := range want {
		t.Errorf("serve has no flag --%s", name)
	}
}
