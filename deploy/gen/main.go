// Command gen writes the deploy files that embed generated content (the
// PrometheusRule from rules/, the dashboards ConfigMaps from dashboards/,
// the demo envelope and the example k6 script). `go generate ./...` runs
// it from the module root after the rules and dashboards are generated:
//
//	go run ./deploy/gen            # write
//	go run ./deploy/gen -check     # exit 1 when a file is stale
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/envelope-dev/envelope/deploy"
)

func main() {
	root := flag.String("root", ".", "module root")
	check := flag.Bool("check", false, "only report stale files, exit 1 if any")
	flag.Parse()

	files, err := deploy.Generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *check {
		if stale := deploy.Stale(*root, files); len(stale) > 0 {
			fmt.Fprintf(os.Stderr, "%v: %v\n", deploy.ErrStale, stale)
			os.Exit(1)
		}
		return
	}
	if err := deploy.Write(*root, files); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
