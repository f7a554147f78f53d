package k6

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// LoadOptions selects how a result file is read and summarized.
type LoadOptions struct {
	Format       Format        // "" detects the format from the content
	Stats        []string      // trend stats to compute (k6 names); nil = avg,min,med,max,p(90),p(95)
	SkipWarmup   time.Duration // drop points earlier than start+SkipWarmup
	From, To     time.Duration // keep points in [start+From, start+To); To 0 = to the end
	GroupBy      string        // tag to group statistics by ("" = no groups)
	Mode         Mode          // ModeExact (default) or ModeSketch for point streams
	MemoryBudget int64         // bytes; exact mode switches to sketch beyond it (0 = no limit)
	KeepPoints   bool          // keep Run.Points
	Lenient      bool          // skip and count bad lines instead of failing
	Progress     io.Writer     // progress bar target (a terminal), nil for none

	// Submetrics adds sub-metrics to compute from point streams, by name
	// ("http_req_duration{name:home}"), beyond those NDJSON Metric lines
	// declare and http_req_duration{expected_response:true}.
	Submetrics []string
	// Types gives metric types for CSV, which carries none: built-in
	// metrics are known, others default to trend.
	Types map[string]MetricDef
	// IntervalConfidence asks for the interval of every trend view's
	// median and percentiles at this confidence, in Metric.Intervals
	// (0 = none); the samples of every trend then also go to time bins
	// (at most IntervalBins sketches a class) for the batches over time
	// those intervals take.
	IntervalConfidence float64
	// IndependentIntervals keeps only the order-statistic intervals,
	// which take a run's samples as independent: the within-run error of
	// a model whose requests are drawn independently, against which that
	// model's run-level variance is measured.
	IndependentIntervals bool
	// Timeline bins the http_req_duration samples by time (Run.Timeline).
	Timeline bool
	// Workers parses with this many goroutines (0 = GOMAXPROCS).
	Workers int
}

// DefaultStats are k6's default summaryTrendStats; a fresh slice each
// call.
func DefaultStats() []string { return []string{"avg", "min", "med", "max", "p(90)", "p(95)"} }

// ErrNotImplemented is returned for formats this package does not load.
var ErrNotImplemented = errors.New("not implemented")

// Load reads one k6 result file ("-" for stdin), detecting its format from
// the content. A gzip stream (k6 writes one for a ".gz" name) is unpacked.
func Load(path string, opts LoadOptions) (*Run, error) {
	if path == "-" {
		return load("-", os.Stdin, -1, opts)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // only read
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return load(path, f, size, opts)
}

// LoadReader reads one k6 result from r; name is used in errors and Run.Source.
func LoadReader(name string, r io.Reader, opts LoadOptions) (*Run, error) {
	return load(name, r, -1, opts)
}

func load(name string, r io.Reader, size int64, opts LoadOptions) (*Run, error) {
	var counter *countingReader
	if opts.Progress != nil && size > 0 {
		counter = &countingReader{r: r}
		r = counter
		stop := startProgress(opts.Progress, name, size, counter)
		defer stop()
	}
	in, err := NewInput(name, r)
	if err != nil {
		return nil, err
	}
	defer in.Close() //nolint:errcheck // only read
	br := in.Reader
	f, err := sniff(name, br)
	if err != nil {
		return nil, err
	}
	if opts.Format != "" && opts.Format != f && (f != formatSummary || !isSummary(opts.Format)) {
		return nil, fmt.Errorf("%s: asked for format %s but the content is %s", name, opts.Format, f)
	}
	switch f {
	case formatSummary:
		data, err := io.ReadAll(br)
		if err != nil {
			return nil, readError(name, err)
		}
		return loadSummary(name, data, opts.Format)
	case FormatNDJSON, FormatCSV:
		return loadPoints(name, f, br, opts)
	}
	return nil, fmt.Errorf("%s: format %s: %w", name, f, ErrNotImplemented)
}
