package exporter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
)

// Inputs are what a served process reads besides what is pushed to it
// (finished result files replayed at start, a live file followed), and
// what it pushes (the OTLP push of what it serves).
type Inputs struct {
	Results  []string                    // replayed in order; not ready until done
	Follow   string                      // followed as it grows; "-" reads stdin; "" = none
	Push     func(context.Context) error // pushes what is served until ctx ends; nil = no push
	Replayed func()                      // called once the results are replayed, if set
}

// RunWith replays the finished files, follows the live file, pushes over
// OTLP if asked, and serves until ctx ends; an interruption is not an
// error.
func (s *Server) RunWith(ctx context.Context, in Inputs) error {
	log := s.log
	g, ctx := errgroup.WithContext(ctx)
	s.SetReady(len(in.Results) == 0)
	g.Go(func() error { return s.Run(ctx) })
	g.Go(func() error {
		for _, f := range in.Results {
			if ctx.Err() != nil {
				return nil // interrupted: the files left are not read
			}
			start := time.Now()
			n, err := s.ReplayFile(f)
			if err != nil {
				return fmt.Errorf("--k6.results: %w", err)
			}
			log.Info("replayed results", "file", f, "points", n, "took", time.Since(start).Round(time.Millisecond))
		}
		s.SetReady(true)
		if len(in.Results) > 0 && in.Replayed != nil {
			in.Replayed()
		}
		return nil
	})
	switch in.Follow {
	case "":
	case "-":
		// A read from stdin cannot be interrupted: do not make shutdown
		// wait for it.
		go func() {
			if err := s.Follow(ctx, "-"); err != nil {
				log.Error("reading stdin", "err", err)
				return
			}
			log.Info("stdin closed; still serving the series")
		}()
	default:
		g.Go(func() error { return s.Follow(ctx, in.Follow) })
	}
	if in.Push != nil {
		g.Go(func() error {
			if err := in.Push(ctx); !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		})
	}
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
