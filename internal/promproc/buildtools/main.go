// Command buildtools builds every tool of the source tree's tool
// directives (go.mod's and tools/*/go.mod's) as the tests and `envelope
// stack` build them (promproc.BuildTools: the same build tags, the same
// remembered paths). CI runs it before `go test ./...`, so that on a
// cold build cache the slowest step runs alone and counts against no
// test binary's timeout.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/envelope-dev/envelope/internal/promproc"
)

func main() {
	names, err := promproc.Tools()
	if err == nil {
		err = promproc.BuildTools(context.Background(), names...)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildtools:", err)
		os.Exit(1)
	}
}
