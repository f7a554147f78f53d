package stack

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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

func replayOnce(ctx context.Context, srv *exporter.Server, path string, speed float64) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return 0, fmt.Errorf("replay %s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	var (
		p       k6.Point
		first   time.Time
		started = time.Now()
		n, line int
	)
	for sc.Scan() {
		line++
		p.Tags, p.Metadata = nil, nil
		isPoint, def, err := k6.ParseNDJSONLine(sc.Bytes(), &p)
		if err != nil {
			// A bad line is skipped, as the exporter does for live input.
			continue
		}
		if !isPoint {
			if def != nil {
				srv.DefineMetric(def)
			}
			continue
		}
		if first.IsZero() {
			first = p.Time
		}
		due := started.Add(time.Duration(float64(p.Time.Sub(first)) / speed))
		if wait := time.Until(due); wait > 10*time.Millisecond {
			select {
			case <-ctx.Done():
				return n, ctx.Err()
			case <-time.After(wait):
			}
		}
		srv.IngestPoint(&p)
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("replay %s:%d: %w", path, line+1, err)
	}
	return n, nil
}
