package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/history"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// historyRebaselineCommand adds `envelope history rebaseline`.
func (c *cli) historyRebaselineCommand(parent *kingpin.CmdClause, f historyFlags) {
	cmd := parent.Command("rebaseline", "Write an envelope from the main line's runs after the latest accepted change point (acknowledged or expected; outlier runs left out), by baseline's method from the stored per-run values, and compare it with the current envelope figure by figure.")
	since := cmd.Flag("since", "Start at this change point (its id, as history changes shows it) instead of the latest accepted one.").String()
	cur := cmd.Flag("envelope", "The current envelope: the new one keeps its name, match, tolerance, workload, warm-up and labels, and is compared with it.").ExistingFile()
	name := cmd.Flag("name", "Name of the new envelope (default: the current envelope's, else the test's).").String()
	out := cmd.Flag("out", "Envelope file to write; - for stdout.").Default("envelope.yaml").String()
	format := cmd.Flag("format", cmdline.Choices("Envelope encoding.", "yaml", "json")).Default("yaml").Enum("yaml", "json")
	cmd.Action(c.Action(func() error {
		var old *envelope.Envelope
		if *cur != "" {
			var err error
			if old, err = envelope.ReadFile(*cur); err != nil {
				return err
			}
		}
		ctx, stop := c.SignalContext()
		defer stop()
		s, test, err := f.openTest(ctx, false)
		if err != nil {
			return err
		}
		defer s.Close() //nolint:errcheck // only read
		an, err := history.Analyze(ctx, s, runstore.Line{Test: test, MainBranch: f.mainBranchName()}, changepoint.Config{})
		if err != nil {
			return err
		}
		rb, err := an.Rebaseline(ctx, s, *since)
		if err != nil {
			return err
		}
		if len(rb.Records) < 2 {
			return fmt.Errorf("change point %s lies at run %d: %d run(s) after it, an envelope needs at least 2 (3 or more for its intervals)", rb.Change.ID, rb.From, len(rb.Records))
		}
		n := *name
		if n == "" && old == nil {
			n = test
		}
		env, err := runstore.Envelope(rb.Records, old, n, false)
		if err != nil {
			return err
		}
		return c.writeRebaseline(env, old, rb, an, *out, envelope.Format(*format))
	}))
}

// writeRebaseline writes the new envelope and says what it rests on and
// how it differs from the current one.
func (c *cli) writeRebaseline(env, old *envelope.Envelope, rb *history.Rebaseline, an *history.Analysis, out string, f envelope.Format) error {
	for _, w := range env.Warnings {
		c.Logger().Warn(w)
	}
	if out == "-" || out == "" {
		b, err := envelope.Marshal(env, f)
		if err != nil {
			return err
		}
		_, err = c.Stdout.Write(b)
		return err
	}
	if err := envelope.WriteFile(out, env, f); err != nil {
		return err
	}
	if err := rb.WriteText(c.Stdout, an, old, env); err != nil {
		return err
	}
	c.Printf("envelope: %s\n", out)
	return nil
}
