package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// Two build tags make smaller binaries for the container images; the
// default build has everything. docs/builds.md says why.
//
//   - serveonly leaves out fullOnlyCommands, which link the chart
//     library, Prometheus's query engine, the dashboard SDK and the
//     embedded sample runs, none of which serving uses.
//   - nocloudwatch leaves out the CloudWatch collector and with it the
//     AWS SDK, which only that collector uses.

// fullOnlyCommands are the commands a serve-only build leaves out.
var fullOnlyCommands = []string{"backtest", "baseline", "compare", "dashboards", "demo", "history", "report", "rules", "simulate", "stack"}

// fullCommandLine says where the commands a smaller build lacks are.
const fullCommandLine = "install the full command line with `go install github.com/envelope-dev/envelope/cmd/exporter@latest`"

// notInThisBuild is the error of a command the serve-only build leaves
// out.
func notInThisBuild(name string) error {
	return withCode(codeError, fmt.Errorf("%s is not in this build: this is the serve-only binary (built with -tags serveonly), which has serve, ecs and summarize; %s", name, fullCommandLine))
}

// leftOut is the error for args that use what this build leaves out,
// found before parsing, so that the command's own flags (unknown here)
// do not hide why it is missing; nil when the build has all they use.
func leftOut(app *kingpin.Application, args []string) error {
	if noCloudWatch {
		for _, a := range args {
			if a == "--" {
				break
			}
			if strings.HasPrefix(a, "--cloudwatch.") {
				flag, _, _ := strings.Cut(a, "=")
				return withCode(codeError, fmt.Errorf("%s: this binary has no CloudWatch collector (built with -tags nocloudwatch, as the sidecar image is, so that it links no AWS SDK); use a build without that tag, such as the CloudWatch image or the full command line", flag))
			}
		}
	}
	if !serveOnly {
		return nil
	}
	ctx, _ := app.ParseContext(args)
	if ctx == nil || ctx.SelectedCommand == nil {
		return nil
	}
	if name := ctx.SelectedCommand.FullCommand(); slices.Contains(fullOnlyCommands, name) {
		return notInThisBuild(name)
	}
	return nil
}
