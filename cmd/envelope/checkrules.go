package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/backtest"
	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/promproc"
	"github.com/envelope-dev/envelope/internal/rules"
)

// checkRulesCommand adds `envelope check-rules`: promtool's lint and unit
// tests of a folder `envelope rules` wrote.
func (c *cli) checkRulesCommand(app *kingpin.Application) {
	cmd := app.Command("check-rules", "Check the rule files of a folder `envelope rules` wrote with promtool (check rules --lint=all --lint-fatal) and run their promtool unit tests (test rules). Inside the source tree it runs the promtool the tests build and remember (built once, with a line saying so, when missing); elsewhere promtool on $PATH or --promtool.path. Exits with promtool's status.")
	dir := cmd.Flag("dir", "Folder holding the *.rules.yaml files and their "+rules.TestFile+".").Default("rules").ExistingDir()
	bin := cmd.Flag("promtool.path", "promtool binary to run (default: the source tree's own, else promtool on $PATH).").String()
	cmd.Action(c.Action(func() error {
		ruleFiles, err := backtest.RuleFiles(*dir)
		if err != nil {
			return err
		}
		tests, err := filepath.Glob(filepath.Join(*dir, "*.rules.test.yaml"))
		if err != nil {
			return err
		}
		ctx, stop := c.SignalContext()
		defer stop()
		promtool, err := locatePromtool(ctx, *bin)
		if err != nil {
			return err
		}
		c.Printf("promtool: %s\n", promtool)
		if err := c.promtool(ctx, promtool, append([]string{"check", "rules", "--lint=all", "--lint-fatal"}, ruleFiles...)); err != nil {
			return err
		}
		if len(tests) == 0 {
			c.Printf("%s: no *.rules.test.yaml files, no unit tests run\n", *dir)
			return nil
		}
		return c.promtool(ctx, promtool, append([]string{"test", "rules"}, tests...))
	}))
}

// locatePromtool finds the promtool to run: explicit when given; inside
// the source tree the copy go.mod's tool directive pins, which the tests
// build and remember (so the lint is the version the tests pass); else
// promtool on $PATH.
func locatePromtool(ctx context.Context, explicit string) (string, error) {
	if explicit == "" {
		if _, err := promproc.ModuleRoot(); err == nil {
			return promproc.GoTool(ctx, "promtool")
		}
	}
	p, err := promproc.Locate(ctx, "promtool", explicit)
	if err != nil {
		return "", fmt.Errorf("%w (or run check-rules inside the envelope source tree, which builds it)", err)
	}
	return p, nil
}

// promtool runs promtool with args, its output passed through; a failure
// exits with promtool's own status.
func (c *cli) promtool(ctx context.Context, bin string, args []string) error {
	cmd := promproc.Command(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = c.Stdout, c.Stderr
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() > 0 {
		return cmdline.WithCode(ee.ExitCode(), fmt.Errorf("promtool %s %s failed (exit %d)", args[0], args[1], ee.ExitCode()))
	}
	if err != nil {
		return fmt.Errorf("promtool %s %s: %w", args[0], args[1], err)
	}
	return nil
}
