// Command docsgen writes docs/metrics.md from the catalogue; `go generate
// ./...` runs it (slot 3 of generate.go).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/envelope-dev/envelope/internal/catalogue"
)

func main() {
	out := flag.String("out", "docs/metrics.md", "file to write")
	flag.Parse()
	if err := os.WriteFile(*out, catalogue.MetricsMarkdown(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "docsgen:", err)
		os.Exit(1)
	}
}
