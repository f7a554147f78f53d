// Package cmdline holds what the two commands, the exporter daemon and
// the envelope command line, share around their commands: the app with
// its logging and version flags, the output that remembers a failed
// write, the exit-code policy, usage errors that say what was meant, and
// the handling of SIGINT and SIGTERM.
//
// Each command package builds its app with New and adds its commands,
// each a function in its own file; main calls Run.
package cmdline

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
)

// CLI is one invocation's state: where commands write and how they log.
// Each command's flags live in locals of the function that adds it, so
// a fresh app parses from a clean slate.
type CLI struct {
	out            *output // stdout, remembering a failed write
	Stdout, Stderr io.Writer
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

// Printf, Print and Println write to stdout; the action fails if a
// write did.
func (c *CLI) Printf(format string, a ...any) { _, _ = fmt.Fprintf(c.Stdout, format, a...) }
func (c *CLI) Print(a ...any)                 { _, _ = fmt.Fprint(c.Stdout, a...) }
func (c *CLI) Println(a ...any)               { _, _ = fmt.Fprintln(c.Stdout, a...) }

// Action is a command's action under the exit-code policy: an error it
// returns, or a failed write of its output, exits with CodeError unless
// the error carries another code (WithCode). Run tells an action's error
// from kingpin's parse errors by that code: only the latter get
// explainParseError's hints.
func (c *CLI) Action(run func() error) kingpin.Action {
	return func(*kingpin.ParseContext) error {
		err := run()
		if err == nil && c.out.err != nil {
			err = fmt.Errorf("writing output: %w", c.out.err)
		}
		if err == nil {
			return nil
		}
		if _, ok := errors.AsType[*exitError](err); ok {
			return err
		}
		return WithCode(CodeError, err)
	}
}

// exitError carries a process exit code (compare exits 1 on a regression).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// WithCode wraps an action's err so main exits with code rather than
// CodeError; with a nil err it exits with code and prints nothing (a
// regression the command's output already reported).
func WithCode(code int, err error) error { return &exitError{code: code, err: err} }

// Exit codes, one policy for every command: 0 success; 1 the judged runs
// regressed (compare); 2 anything else, from a usage error or bad input
// to a file that cannot be written.
const (
	codeOK         = 0
	CodeRegression = 1
	CodeError      = 2
)

// The version a build without -ldflags reports; set before any app is
// built, so concurrent apps only read it.
func init() {
	if version.Version == "" {
		version.Version = "0.1.0-dev"
	}
}

// New builds an app named name with the flags every command shares
// (--log.level, --log.format, --version, -h), writing to stdout and
// stderr. Help and version go to stdout (asked for, so output); errors
// and the usage that follows a usage error go to stderr.
func New(name, help string, stdout, stderr io.Writer) (*kingpin.Application, *CLI) {
	out := &output{w: stdout}
	c := &CLI{out: out, Stdout: out, Stderr: stderr, logConfig: &promslog.Config{Writer: stderr}, interrupts: processInterrupts}
	app := kingpin.New(name, help)
	app.Version(version.Print(name))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	promslogflag.AddFlags(app, c.logConfig)
	return app, c
}

// Logger builds the logger from --log.level and --log.format. Lines
// name the source file and line only at debug level: a warning about
// the user's input is about the input, not about where the code is.
func (c *CLI) Logger() *slog.Logger {
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

// terminated carries the status kingpin asks to exit with after help or
// a version, so Run returns it instead of the process exiting.
type terminated int

// Run parses args with app and applies the exit-code policy; stderr
// gets the error messages (the app's own writer for everything else).
func Run(app *kingpin.Application, args []string, stderr io.Writer) (code int) {
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
		_, _ = fmt.Fprintf(stderr, "%s: error: a command is required\n", app.Name)
		_ = app.UsageForContext(ctx)
		return CodeError
	}
	_, err := app.Parse(args)
	if err == nil {
		return codeOK
	}
	ee, ok := errors.AsType[*exitError](err)
	if !ok {
		// Every action's error carries its code (Action): one without
		// is kingpin's, about the command line.
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", app.Name, MissingFileMessage(explainParseError(app, args, err)))
		return CodeError
	}
	if ee.err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", app.Name, MissingFileMessage(err))
	}
	return ee.code
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
// argument naming no file. Like usage.go's patterns it is compiled on
// first use, by an error, not by every start.
var kingpinMissing = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^path '(.*)' does not exist$`) })

// MissingFileMessage gives every missing input file one message, "FILE:
// no such file", whether kingpin or a reader found it missing.
func MissingFileMessage(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no such file", pe.Path)
	}
	if m := kingpinMissing().FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s: no such file", m[1])
	}
	return err
}

// Choices appends an enum flag's choices to its help.
func Choices(help string, values ...string) string {
	return help + " One of: " + strings.Join(values, ", ") + "."
}

// Main runs one invocation on the process's arguments and exits with
// its code. The SIGINT and SIGTERM handler goes in first, before
// anything is read (signals.go says why).
func Main(run func(args []string, stdout, stderr io.Writer) int) {
	processInterrupts = catchInterrupts(os.Exit)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
