package main

import (
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/k6"
)

// summarizeCommand adds `envelope summarize`.
func (c *cli) summarizeCommand(app *kingpin.Application) {
	cmd := app.Command("summarize", "Load k6 results of any format (summary JSON of every shape, NDJSON, CSV; .gz; - for stdin) and print k6's end-of-test statistics per metric and sub-metric.")
	format := cmd.Flag("format", cmdline.Choices("Output format.", "text", "json")).Default("text").Enum("text", "json")
	statsList := cmd.Flag("stats", "Trend stats to show, as k6's --summary-trend-stats (avg,min,med,max,count,p(N)). Default: avg,min,med,max,p(90),p(95); summary files show the stats they hold.").String()
	skip := cmd.Flag("skip-warmup", "Drop samples in the first D of the run (point streams), e.g. 3m.").Duration()
	from := cmd.Flag("from", "Keep samples from start+D (point streams).").Duration()
	to := cmd.Flag("to", "Keep samples before start+D (point streams).").Duration()
	groupBy := cmd.Flag("group-by", "Also compute statistics per value of this tag (point streams), e.g. name, endpoint, scenario.").String()
	mode := addModeFlags(cmd)
	lenient := cmd.Flag("lenient", "Skip bad lines, count them and report the count instead of failing.").Bool()
	subs := cmd.Flag("submetric", "Extra sub-metric to compute from point streams, e.g. 'http_req_duration{name:home}' (repeatable).").Strings()
	files := cmd.Arg("file", "k6 result files; - reads stdin.").Required().Strings()
	cmd.Action(c.Action(func() error {
		var stats []string
		if *statsList != "" {
			var err error
			if stats, err = k6.ParseStats(*statsList); err != nil {
				return err
			}
		}
		opts := mode.apply(k6.LoadOptions{
			Stats:      stats,
			SkipWarmup: *skip,
			From:       *from,
			To:         *to,
			GroupBy:    *groupBy,
			Lenient:    *lenient,
			Submetrics: *subs,
		})
		if f, ok := c.Stderr.(*os.File); ok && isTerminal(f) {
			opts.Progress = c.Stderr
		}
		var runs []*k6.Run
		for _, f := range *files {
			if f == "" { // kingpin hands a lone "-" over as ""
				f = "-"
			}
			r, err := k6.Load(f, opts)
			if err != nil {
				return err
			}
			if r.Skipped > 0 {
				c.Logger().Warn("skipped bad lines", "file", f, "count", r.Skipped)
			}
			c.warnIgnoredWindow(r, f, opts)
			runs = append(runs, r)
		}
		if *format == "json" {
			return k6.WriteJSON(c.Stdout, runs, stats)
		}
		return k6.WriteText(c.Stdout, runs, stats)
	}))
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// warnIgnoredWindow says when a window or grouping asked for had no effect,
// so an empty table or ungrouped numbers are not taken for a result: summary
// files hold no samples to window or group, and a window past the end of a
// point stream keeps nothing.
func (c *cli) warnIgnoredWindow(r *k6.Run, file string, opts k6.LoadOptions) {
	windowed := opts.SkipWarmup > 0 || opts.From > 0 || opts.To > 0
	if r.Mode == k6.ModeSummary {
		if windowed {
			c.Logger().Warn("--skip-warmup, --from and --to need a point stream (NDJSON or CSV); ignored for a summary file", "file", file)
		}
		if opts.GroupBy != "" {
			c.Logger().Warn("--group-by needs a point stream (NDJSON or CSV); ignored for a summary file", "file", file)
		}
		return
	}
	if windowed && len(r.Metrics) == 0 {
		c.Logger().Warn("the window keeps no samples: it starts after the run's last sample", "file", file)
	}
}
