package stack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/envelope-dev/envelope/internal/exporter"
	"github.com/envelope-dev/envelope/internal/k6"
)

// Replay feeds a finished k6 NDJSON file (plain or gzip) into srv at the
// pace its points were recorded, speed times faster, as if the run were
// happening now: rates and quantiles move in Prometheus as they did
// during the test. Metric lines take effect at once. With loop, the file
// starts over when it ends (counters keep counting). It returns the
// number of points ingested when the file ends or ctx is done.
func Replay(ctx context.Context, srv *exporter.Server, path string, speed float64, loop bool) (int, error) {
	if speed <= 0 {
		return 0, fmt.Errorf("replay %s: speed %v must be positive", path, speed)
	}
	total := 0
	for {
		n, err := replayOnce(ctx, srv, path, speed)
		total += n
		if err != nil || !loop || ctx.Err() != nil {
			if errors.Is(err, context.Canceled) {
				err = nil
			}
			return total, err
		}
		if n == 0 {
			return total, fmt.Errorf("replay %s: no points", path)
		}
	}
}

// errStop ends a replay from inside the point reader when ctx is done.
var errStop = errors.New("replay stopped")

func replayOnce(ctx context.Context, srv *exporter.Server, path string, speed float64) (int, error) {
	var (
		first   time.Time
		started = time.Now()
		n       int
	)
	err := k6.ReadPointsFile(path, &k6.PointReader{
		OnMetric: func(def *k6.MetricDef) error {
			srv.DefineMetric(def)
			return nil
		},
		OnPoint: func(p *k6.Point) error {
			if first.IsZero() {
				first = p.Time
			}
			due := started.Add(time.Duration(float64(p.Time.Sub(first)) / speed))
			if wait := time.Until(due); wait > 10*time.Millisecond {
				select {
				case <-ctx.Done():
					return errStop
				case <-time.After(wait):
				}
			}
			srv.IngestPoint(p)
			n++
			return nil
		},
		// A bad line is skipped, as the exporter does for live input; a
		// line too long to read stops the replay.
		OnBad: func(e *k6.LineError) error {
			if errors.Is(e, k6.ErrLineTooLong) {
				return e
			}
			return nil
		},
	})
	switch {
	case errors.Is(err, errStop):
		return n, ctx.Err()
	case err != nil:
		return n, fmt.Errorf("replay: %w", err)
	}
	return n, nil
}
