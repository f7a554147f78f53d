package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/exporter"
)

// A demoStep is one part of `envelope demo`. Each writes into the output
// folder and may print a line about what it did.
type demoStep struct {
	name string
	does string // the step in the command's help, which must name it
	run  func(ctx context.Context, d *demoEnv) error
}

// demoEnv is what steps share: the invocation's writers and logger, and
// the demo's flags.
type demoEnv struct {
	*cli
	Dir   string // output folder
	Serve bool   // false with --no-serve: steps must not block
	Addr  string // listen address for the serving step
	// Run runs an envelope command line (runCLI), for the steps that
	// run a command as a user would.
	Run func(args []string, stdout, stderr io.Writer) int
}

// demoSteps are the demo's steps in the order they run. Later steps read
// what earlier ones wrote: dashboards take their thresholds from the
// envelope file, backtest reads the rule files, and serve replays the
// simulated runs backtest wrote.
var demoSteps = []demoStep{
	{"summarize", "summarize them", demoSummarize},
	{"baseline", "derive the envelope and its report", demoBaseline},
	{"rules", "write rules", demoRules},
	{"compare", "compare runs", demoCompare},
	{"dashboards", "dashboards", demoDashboards},
	{"history", "record 30 runs by commit into a run history and show one figure across them", demoHistory},
	{"backtest", "backtest a simulated baseline and a regressed run against the rules", demoBacktest},
	{"pages", "write every report's self-contained HTML page", demoPages},
	{"serve", "serve the envelope and the simulated run until interrupted", demoServe},
}

// demoCommand adds `envelope demo`.
func (c *cli) demoCommand(app *kingpin.Application) {
	cmd := app.Command("demo", "Run the whole flow on the embedded sample runs: summarize them, derive the envelope and its report, write rules and dashboards, compare runs, record 30 runs by commit into a run history and show one figure across them, backtest a simulated baseline and a regressed run against the rules, write every report's self-contained HTML page, then serve the envelope and the simulated run until interrupted.")
	dir := cmd.Flag("out", "Folder to write the demo's files into, kept afterwards (default: a new temporary folder, removed when the demo ends).").String()
	serve := cmd.Flag("serve", "Serve the envelope and the simulated run on /metrics until interrupted; --no-serve writes the files and exits.").Default("true").Bool()
	addr := cmd.Flag("web.listen-address", "Address the demo serves /metrics on.").Default("127.0.0.1:" + exporter.DefaultPort).String()
	cmd.Action(c.Action(func() error {
		out := *dir
		if out == "" {
			var err error
			if out, err = os.MkdirTemp("", "envelope-demo-"); err != nil {
				return err
			}
			// A temporary folder is the demo's alone: it goes when the
			// demo ends, whether it finished, failed or was interrupted.
			defer func() {
				if err := os.RemoveAll(out); err != nil {
					c.Printf("could not remove the demo's temporary folder %s: %v\n", out, err)
					return
				}
				c.Printf("removed the demo's temporary folder %s (keep the files with --out DIR)\n", out)
			}()
		} else if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		abs, _ := filepath.Abs(out)
		if *dir == "" {
			c.Printf("demo output folder: %s (temporary, removed when the demo ends; --out DIR keeps the files)\n", abs)
		} else {
			c.Printf("demo output folder: %s\n", abs)
		}
		ctx, stop := c.SignalContext()
		defer stop()
		env := &demoEnv{cli: c, Dir: abs, Serve: *serve, Addr: *addr, Run: runCLI}
		for _, s := range demoSteps {
			if err := s.run(ctx, env); err != nil {
				return fmt.Errorf("demo %s: %w", s.name, err)
			}
		}
		if ctx.Err() != nil {
			// go run reports exit status 1 for any program a signal
			// interrupted, whatever the program's own status.
			c.Println("interrupted: the demo stopped serving and exits 0 (under go run, go reports exit status 1 for any interrupted program)")
		}
		return nil
	}))
}

// demoServe serves both demo envelopes and the simulated runs until
// interrupted, unless --no-serve.
func demoServe(ctx context.Context, d *demoEnv) error {
	if !d.Serve {
		return nil
	}
	env, err := demo.Envelope()
	if err != nil {
		return err
	}
	second, err := demo.SecondEnvelope()
	if err != nil {
		return err
	}
	cfg := exporter.DefaultConfig()
	cfg.Envelope, cfg.Envelopes, cfg.AllowTags = env, []*envelope.Envelope{second}, []string{"envelope"}
	cfg.Logger, cfg.ListenAddresses = d.Logger(), []string{d.Addr}
	srv, err := exporter.New(cfg)
	if err != nil {
		return err
	}
	// Point files the demo wrote (simulated runs), when there are any.
	files, _ := filepath.Glob(filepath.Join(d.Dir, "*.ndjson*"))
	host := d.Addr
	if strings.HasPrefix(host, ":") {
		host = "localhost" + host
	}
	d.Printf("serving the demo envelopes %s and %s on http://%s/metrics (Ctrl-C to stop)\n", env.Name, second.Name, host)
	return srv.RunWith(ctx, exporter.Inputs{Results: files})
}
