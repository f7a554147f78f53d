package k6

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// startProgress draws a one-line progress bar of the bytes read so far on
// w (meant for a terminal's stderr) every 200 ms, and clears it on stop.
func startProgress(w io.Writer, name string, size int64, c *countingReader) (stop func()) {
	t := time.NewTicker(200 * time.Millisecond)
	stopDraw := drawProgress(w, name, size, c, t.C)
	return func() {
		stopDraw()
		t.Stop()
	}
}

// drawProgress draws the bar on each tick until stop, then clears it.
func drawProgress(w io.Writer, name string, size int64, c *countingReader, ticks <-chan time.Time) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	label := filepath.Base(name)
	if len(label) > 24 {
		label = "…" + label[len(label)-23:]
	}
	// The bar is a courtesy on the terminal: a failed write must not stop
	// the load, so write errors are dropped.
	go func() {
		defer close(finished)
		drawn := false
		for {
			select {
			case <-done:
				if drawn {
					_, _ = fmt.Fprintf(w, "\r%s\r", strings.Repeat(" ", 78))
				}
				return
			case <-ticks:
				_, _ = fmt.Fprint(w, progressLine(label, c.n.Load(), size))
				drawn = true
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// progressLine renders "\rname [=====>    ]  42%  12.3/29.0 MB".
func progressLine(label string, n, size int64) string {
	const width = 30
	frac := float64(n) / float64(size)
	if frac > 1 {
		frac = 1
	}
	fill := int(frac * width)
	bar := strings.Repeat("=", fill)
	if fill < width {
		bar += ">" + strings.Repeat(" ", width-fill-1)
	}
	return fmt.Sprintf("\r%-24s [%s] %3.0f%%  %.1f/%.1f MB", label, bar, frac*100, float64(n)/1e6, float64(size)/1e6)
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
