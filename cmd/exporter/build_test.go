package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBuildDeps holds each command's promise about what it links, read
// from `go list -deps` (no compiling). The exporter daemon links no chart
// library, PromQL engine, dashboard SDK or SQL driver, and without the
// nocloudwatch tag no AWS SDK either; neither command links service
// discovery or another cloud's SDK. The envelope command must link what
// the daemon leaves out, so a pattern that matches nothing (a package
// that moved) cannot pass unnoticed. A path ending in "/" stands for
// every package under it.
func TestBuildDeps(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go command not found: %v", err)
	}
	offline := []string{
		"gonum.org/v1/plot",
		"github.com/prometheus/prometheus/promql",
		"github.com/grafana/grafana-foundation-sdk/go/dashboard",
		"modernc.org/sqlite",
		"github.com/jackc/pgx/v5/stdlib",
		"github.com/envelope-dev/envelope/internal/backtest",
		"github.com/envelope-dev/envelope/internal/chart",
		"github.com/envelope-dev/envelope/internal/compare",
		"github.com/envelope-dev/envelope/internal/dashboards",
		"github.com/envelope-dev/envelope/internal/demo",
		"github.com/envelope-dev/envelope/internal/history",
		"github.com/envelope-dev/envelope/internal/otava",
		"github.com/envelope-dev/envelope/internal/report",
		"github.com/envelope-dev/envelope/internal/rules",
		"github.com/envelope-dev/envelope/internal/runstore",
		"github.com/envelope-dev/envelope/internal/simulate",
		"github.com/envelope-dev/envelope/internal/stack",
		"github.com/envelope-dev/envelope/internal/stagereport",
	}
	// Whole modules the daemon links nothing of: the chart library, the
	// dashboard SDK, the SQL drivers. (Matchers are parsed with
	// Prometheus's PromQL parser; its engine, promql, stays out.)
	offlineModules := []string{"gonum.org/v1/plot/", "github.com/grafana/grafana-foundation-sdk/", "modernc.org/", "github.com/jackc/"}
	aws := []string{"github.com/aws/aws-sdk-go-v2/aws", "github.com/aws/aws-sdk-go-v2/service/cloudwatch", "github.com/envelope-dev/envelope/internal/cloudwatch"}
	serve := []string{
		"github.com/envelope-dev/envelope/internal/exporter",
		"github.com/envelope-dev/envelope/internal/ecs",
		"github.com/envelope-dev/envelope/internal/otlp",
		"github.com/envelope-dev/envelope/internal/otelpush",
	}
	never := []string{"github.com/prometheus/prometheus/discovery", "github.com/Azure/", "cloud.google.com/", "k8s.io/"}
	for _, tc := range []struct {
		name, pkg, tags string
		linked, alien   []string
	}{
		{"envelope", "../envelope", "", offline, never},
		{"exporter", ".", "", concat(serve, aws), concat(offline, offlineModules, never)},
		{"exporter nocloudwatch", ".", "nocloudwatch", serve, concat(offline, offlineModules, aws, []string{"github.com/aws/"}, never)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(gobin, "list", "-deps", "-tags", tc.tags, tc.pkg).Output()
			if err != nil {
				t.Fatalf("go list: %v", err)
			}
			deps := map[string]bool{}
			for _, p := range strings.Fields(string(out)) {
				deps[p] = true
			}
			for _, p := range tc.linked {
				if !deps[p] {
					t.Errorf("%s is not linked", p)
				}
			}
			for p := range deps {
				for _, a := range tc.alien {
					if p == a || strings.HasSuffix(a, "/") && strings.HasPrefix(p, a) {
						t.Errorf("%s is linked (%s)", p, a)
					}
				}
			}
		})
	}
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
