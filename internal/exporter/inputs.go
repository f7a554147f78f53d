package exporter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/envelope-dev/envelope/internal/otelpush"
)

// Inputs are what a served process reads besides what is pushed to it:
// finished result files replayed at start, a live file followed, and an
// OTLP push of what it serves.
type Inputs struct {
	Results  []string         // replayed in order; not ready until done
	Follow   string           // followed as it grows; "-" reads stdin; "" = none
	Push     otelpush.Options // Push.Endpoint "" = no push
	Replayed func()           // called once the results are replayed, if set
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
	if in.Push.Endpoint != "" {
		g.Go(func() error {
			p := in.Push
			if p.Logger == nil {
				p.Logger = log
			}
			p.OnError = s.PushFailed
			err := otelpush.Run(ctx, s.K6Gatherer(), p)
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		})
	}
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
