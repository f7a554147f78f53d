package cmdline

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// interrupts is the process's handling of SIGINT and SIGTERM, installed
// first thing in main, so that no signal is lost before a command is
// ready for it: a shell script starts a background job with SIGINT
// ignored until a handler is installed, so `serve` would keep running,
// and otherwise the default action would kill it before it could stop
// cleanly. A command that runs until interrupted (serve, demo, stack, ecs
// record), or that works on a run history (the history commands: their
// transaction rolls back and the store closes), claims the signal and
// finds its context already ended if one came early; any other command
// exits at once with 130, as the default action would have.
type interrupts struct {
	ctx     context.Context
	claimed atomic.Bool
}

// processInterrupts is set by main; commands run in-process by tests
// install their own handling (SignalContext).
var processInterrupts *interrupts

// catchInterrupts installs the handler; exit ends the process when no
// command has claimed the signal.
func catchInterrupts(exit func(int)) *interrupts {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	in := &interrupts{ctx: ctx}
	go func() {
		<-ch
		cancel()
		if !in.claimed.Load() {
			exit(130)
		}
	}()
	return in
}

// SignalContext is the context a command stops on when interrupted:
// ended by the first SIGINT or SIGTERM, even one that came before the
// command started. Once a command has taken it, a signal does not end
// the process: the command must stop on the context.
func (c *CLI) SignalContext() (context.Context, context.CancelFunc) {
	if c.interrupts != nil {
		c.interrupts.claimed.Store(true)
		return context.WithCancel(c.interrupts.ctx)
	}
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
