package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBuildDeps holds each build's promise about what it links, read
// from `go list -deps` (no compiling): the serve-only build links none
// of the packages only the other commands use, the nocloudwatch build
// no AWS SDK, and no build links service discovery or another cloud's
// SDK. The default build must link what the others leave out, so the
// check would notice a pattern that matches nothing. A path ending in
// "/" stands for every package under it.
func TestBuildDeps(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go command not found: %v", err)
	}
	fullOnly := []string{
		"gonum.org/v1/plot",
		"github.com/prometheus/prometheus/promql",
		"github.com/grafana/grafana-foundation-sdk/go/dashboard",
		"github.com/envelope-dev/envelope/internal/backtest",
		"github.com/envelope-dev/envelope/internal/chart",
		"github.com/envelope-dev/envelope/internal/compare",
		"github.com/envelope-dev/envelope/internal/dashboards",
		"github.com/envelope-dev/envelope/internal/demo",
		"github.com/envelope-dev/envelope/internal/history",
		"github.com/envelope-dev/envelope/internal/report",
		"github.com/envelope-dev/envelope/internal/rules",
		"github.com/envelope-dev/envelope/internal/simulate",
		"github.com/envelope-dev/envelope/internal/stack",
		"modernc.org/sqlite",
		"github.com/jackc/pgx/v5/stdlib",
	}
	// The history's SQL drivers, whole modules: a serve-only build links
	// none of them.
	sqlDrivers := []string{"modernc.org/", "github.com/jackc/"}
	aws := []string{"github.com/aws/aws-sdk-go-v2/aws", "github.com/aws/aws-sdk-go-v2/config", "github.com/aws/aws-sdk-go-v2/service/cloudwatch", "github.com/envelope-dev/envelope/internal/cloudwatch"}
	// Alien, every AWS module goes: the SDK and its smithy runtime.
	awsAlien := concat(aws, []string{"github.com/aws/"})
	serve := []string{
		"github.com/envelope-dev/envelope/internal/exporter",
		"github.com/envelope-dev/envelope/internal/ecs",
		"github.com/envelope-dev/envelope/internal/otlp",
		"github.com/envelope-dev/envelope/internal/otelpush",
		"github.com/envelope-dev/envelope/internal/k6",
	}
	never := []string{"github.com/prometheus/prometheus/discovery", "github.com/Azure/", "cloud.google.com/", "k8s.io/"}
	for _, tc := range []struct {
		tags          string
		linked, alien []string
	}{
		{"", concat(fullOnly, aws, serve), nil},
		{"serveonly", concat(aws, serve), concat(fullOnly, sqlDrivers)},
		{"nocloudwatch", concat(fullOnly, serve), awsAlien},
		{"serveonly,nocloudwatch", serve, concat(fullOnly, awsAlien, sqlDrivers)},
	} {
		t.Run("tags="+tc.tags, func(t *testing.T) {
			out, err := exec.Command(gobin, "list", "-deps", "-tags", tc.tags, ".").Output()
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
				for _, a := range concat(tc.alien, never) {
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
