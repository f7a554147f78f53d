// Command exporter ingests k6 results and ECS metrics, derives baseline
// performance envelopes, serves Prometheus series and generates the rules
// and dashboards that judge later runs against an envelope.
//
// newApp builds the whole command line in one place; each subcommand
// lives in its own file as a function that adds it to the app.
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
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
)

// cli is one invocation's state: where commands write and how they log.
// Each command's flags live in locals of the function that adds it, so
// a fresh app parses from a clean slate.
type cli struct {
	out            *output // stdout, remembering a failed write
	stdout, stderr io.Writer
	logConfig      *promslog.Config
	interrupts     *interrupts // nil: each command installs its own (tests)
}

// output is an invocation's stdout. It keeps the first write error, so a
// command whose output could not be written (a full disk, a closed pipe)
// fails instead of exiting 0.
type output struct {
	w   io.Writer
	err error
}

func (o *output) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.err = err
	}
	return n, err
}

// printf writes to stdout; the action fails if a write did.
func (c *cli) printf(format string, a ...any) { _, _ = fmt.Fprintf(c.stdout, format, a...) }

// action is a command's action that ends with exit code 2 when the
// command's output could not be written.
func (c *cli) action(run func() error) kingpin.Action {
	return func(*kingpin.ParseContext) error {
		err := run()
		if err == nil && c.out.err != nil {
			return withCode(codeError, fmt.Errorf("writing output: %w", c.out.err))
		}
		return err
	}
}

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

// The version a build without -ldflags reports; set before any app is
// built, so concurrent apps only read it.
func init() {
	if version.Version == "" {
		version.Version = "0.1.0-dev"
	}
}

// newApp builds the command line: every command and flag, writing to
// stdout and stderr. Help and version go to stdout (asked for, so
// output); errors and the usage that follows a usage error go to stderr.
func newApp(stdout, stderr io.Writer) *kingpin.Application {
	out := &output{w: stdout}
	c := &cli{out: out, stdout: out, stderr: stderr, logConfig: &promslog.Config{Writer: stderr}, interrupts: processInterrupts}
	app := kingpin.New("exporter",
		"Load-test performance envelopes: ingest k6 results and ECS metrics, derive baselines, serve Prometheus series, generate rules and dashboards.")
	app.Version(version.Print("exporter"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	promslogflag.AddFlags(app, c.logConfig)
	for _, add := range c.commands() {
		add(app)
	}
	return app
}

// logger builds the logger from --log.level and --log.format. Lines
// name the source file and line only at debug level: a warning about
// the user's input is about the input, not about where the code is.
func (c *cli) logger() *slog.Logger {
	cfg := c.logConfig
	if cfg.Level == nil {
		cfg.Level = promslog.NewLevel()
	}
	if cfg.Level.Level() <= slog.LevelDebug {
		return promslog.New(cfg)
	}
	opts := &slog.HandlerOptions{Level: cfg.Level, ReplaceAttr: durationText}
	if cfg.Format != nil && cfg.Format.String() == "json" {
		return slog.New(slog.NewJSONHandler(cfg.Writer, opts))
	}
	return slog.New(slog.NewTextHandler(cfg.Writer, opts))
}

// durationText writes durations as Go prints them ("1m30s"), as
// promslog does, in JSON too.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if d, ok := a.Value.Any().(time.Duration); ok {
		a.Value = slog.StringValue(d.String())
	}
	return a
}

func main() {
	processInterrupts = catchInterrupts(os.Exit)
	os.Exit(run(newApp(os.Stdout, os.Stderr), os.Args[1:], os.Stderr))
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

// run parses args with app and applies the exit-code policy; stderr
// gets the error messages (the app's own writer for everything else).
func run(app *kingpin.Application, args []string, stderr io.Writer) (code int) {
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
	if missingCommand(app, args) {
		app.UsageWriter(stderr)
		ctx, _ := app.ParseContext(args)
		// Nothing is left to report a failed write of an error to.
		_, _ = fmt.Fprintln(stderr, "exporter: error: a command is required")
		_ = app.UsageForContext(ctx)
		return codeError
	}
	if err := leftOut(app, args); err != nil {
		_, _ = fmt.Fprintf(stderr, "exporter: %v\n", err)
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
	if ee == nil {
		err = explainParseError(app, args, err)
	}
	_, _ = fmt.Fprintf(stderr, "exporter: %v\n", missingFileMessage(err))
	return code
}

// missingCommand reports whether args name no command, or a command
// group (such as ecs) without one of its commands, and ask for no help.
func missingCommand(app *kingpin.Application, args []string) bool {
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
