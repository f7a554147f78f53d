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
	"io/fs"
	"log/slog"
	"os"
	"regexp"
	"strings"

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

// Exit codes, one policy for every command: 0 success; 1 the judged runs
// regressed (compare); 2 anything else, from a usage error or bad input
// to a file that cannot be written.
const (
	codeOK         = 0
	codeRegression = 1
	codeError      = 2
)

// terminated carries the status kingpin asks to exit with after help or
// a version, so run returns it instead of the process exiting.
type terminated int

func run(args []string) (code int) {
	// Help and version go to stdout (asked for, so output); errors and the
	// usage that follows a usage error go to stderr.
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	app.Terminate(func(status int) { panic(terminated(status)) })
	defer func() {
		if r := recover(); r != nil {
			t, ok := r.(terminated)
			if !ok {
				panic(r)
			}
			code = int(t)
		}
	}()
	if missingCommand(args) {
		app.UsageWriter(stderr)
		defer app.UsageWriter(stdout)
		ctx, _ := app.ParseContext(args)
		fmt.Fprintln(stderr, "exporter: error: a command is required")
		_ = app.UsageForContext(ctx)
		return codeError
	}
	_, err := app.Parse(args)
	if err == nil {
		return codeOK
	}
	code = codeError
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	fmt.Fprintf(stderr, "exporter: %v\n", missingFileMessage(err))
	return code
}

// missingCommand reports whether args name no command, or a command
// group (such as ecs) without one of its commands, and ask for no help.
func missingCommand(args []string) bool {
	ctx, err := app.ParseContext(args)
	if err != nil || ctx == nil {
		return false
	}
	for _, e := range ctx.Elements {
		if f, ok := e.Clause.(*kingpin.FlagClause); ok && (f == app.HelpFlag || f.Model().Name == "version") {
			return false
		}
	}
	if ctx.SelectedCommand == nil {
		return true
	}
	return len(ctx.SelectedCommand.Model().Commands) > 0
}

// kingpinMissing is kingpin's message for an ExistingFile(s) flag or
// argument naming no file.
var kingpinMissing = regexp.MustCompile(`^path '(.*)' does not exist$`)

// missingFileMessage gives every missing input file one message, "FILE:
// no such file", whether kingpin or a reader found it missing.
func missingFileMessage(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no such file", pe.Path)
	}
	if m := kingpinMissing.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s: no such file", m[1])
	}
	return err
}

// choices appends an enum flag's choices to its help.
func choices(help string, values ...string) string {
	return help + " One of: " + strings.Join(values, ", ") + "."
}
