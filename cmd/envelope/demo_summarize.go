package main

import (
	"context"
	"fmt"
	"path"
	"text/tabwriter"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/k6"
)

// The demo opens with what `envelope summarize` prints for the embedded
// runs, so a newcomer sees the inputs before the envelope derived from them.
func demoSummarize(_ context.Context, d *demoEnv) error {
	var runs []*k6.Run
	for _, name := range demo.RunFiles() {
		f, err := demo.FS().Open(name)
		if err != nil {
			return err
		}
		r, err := k6.LoadReader(path.Join(demo.Dir, name), f, k6.LoadOptions{})
		_ = f.Close() // an embedded file: closing it cannot fail to keep data
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	d.Printf("== %d embedded k6 runs (full statistics: envelope summarize %s/runs/*.json)\n", len(runs), demo.Dir)
	tw := tabwriter.NewWriter(d.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	// tw buffers the table; Flush reports a failed write.
	_, _ = fmt.Fprintln(tw, "run\trequests\treq/s\titer/s\tmed ms\tp95 ms\tp99 ms\tmax ms\tfailed\t")
	for _, r := range runs {
		v := func(metric, stat string) float64 {
			if m := r.Metrics[metric]; m != nil {
				return m.Values[stat]
			}
			return 0
		}
		_, _ = fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.0f\t%.0f\t\n", path.Base(r.Source),
			v("http_reqs", "count"), v("http_reqs", "rate"), v("iterations", "rate"),
			v("http_req_duration", "med"), v("http_req_duration", "p(95)"), v("http_req_duration", "p(99)"),
			v("http_req_duration", "max"), v("http_req_failed", "passes"))
	}
	return tw.Flush()
}
