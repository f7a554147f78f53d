package promtest

import (
	"bytes"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// Exposition gathers c through a pedantic registry and renders it in the
// text format for golden files, leaving out the named families (durations
// and other values that change from run to run).
func Exposition(t *testing.T, c prometheus.Collector, omit ...string) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if slices.Contains(omit, mf.GetName()) {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}
