// Command exporter ingests k6 results and ECS metrics, derives baseline
// performance envelopes, serves Prometheus series and generates the rules
// and dashboards that judge later runs against an envelope.
//
// Each subcommand lives in its own file and registers itself in init.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
)

var (
	app = kingpin.New("exporter",
		"Load-test performance envelopes: ingest k6 results and ECS metrics, derive baselines, serve Prometheus series, generate rules and dashboards.")
	logConfig = &promslog.Config{}

	// Where commands write; tests swap them.
	stdout io.Writer = os.Stdout
	stderr io.Writer = os.Stderr
)

// exitError carries a process exit code (compare exits 1 on a regression).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so main exits with code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// defaultPort sits outside the 9100-9999 range most exporters take.
const defaultPort = "19466"

func init() {
	if version.Version == "" {
		version.Version = "0.1.0-dev"
	}
	app.Version(version.Print("exporter"))
	app.HelpFlag.Short('h')
	promslogflag.AddFlags(app, logConfig)
}

// logger builds the process logger from --log.level and --log.format.
func logger() *slog.Logger {
	logConfig.Writer = stderr
	return promslog.New(logConfig)
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	_, err := app.Parse(args)
	if err == nil {
		return 0
	}
	code := 2
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	fmt.Fprintf(stderr, "exporter: %v\n", err)
	return code
}
