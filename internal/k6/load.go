package k6

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
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
	// Workers parses with this many goroutines (0 = GOMAXPROCS).
	Workers int
}

// DefaultStats are k6's default summaryTrendStats.
var DefaultStats = []string{"avg", "min", "med", "max", "p(90)", "p(95)"}

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
	defer f.Close()
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
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(2)
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: broken gzip stream: %v", name, err)
		}
		defer gz.Close()
		br = bufio.NewReaderSize(gz, 64<<10)
	}
	f, err := sniff(name, br)
	if err != nil {
		return nil, err
	}
	if opts.Format != "" && opts.Format != f && !(f == formatSummary && isSummary(opts.Format)) {
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

func isSummary(f Format) bool {
	return f == FormatSummaryExport || f == FormatHandleSummary || f == FormatMachineReadable
}

// formatSummary stands for "one of the three summary shapes" until the
// document is decoded.
const formatSummary Format = "summary"

func readError(name string, err error) error {
	if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: broken gzip stream: %v", name, err)
	}
	return fmt.Errorf("%s: %v", name, err)
}

// sniff tells the format from the first bytes: a CSV header, an NDJSON
// first line (a complete object with "type" Metric or Point), or else a
// JSON document (one of the summaries).
func sniff(name string, br *bufio.Reader) (Format, error) {
	head, err := br.Peek(64 << 10)
	if len(head) == 0 {
		if err != nil && err != io.EOF {
			return "", readError(name, err)
		}
		return "", fmt.Errorf("%s:1: empty file", name)
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n\ufeff")
	trimmed = bytes.TrimPrefix(trimmed, []byte("\ufeff"))
	if len(trimmed) == 0 {
		return "", fmt.Errorf("%s:1: empty file (only white space)", name)
	}
	if bytes.HasPrefix(trimmed, []byte("metric_name,")) {
		return FormatCSV, nil
	}
	if trimmed[0] != '{' {
		return "", fmt.Errorf("%s:1: not k6 output: want a JSON object, NDJSON lines or a CSV header starting metric_name,", name)
	}
	if nl := bytes.IndexByte(trimmed, '\n'); nl >= 0 || len(head) < 64<<10 {
		first := trimmed
		if nl >= 0 {
			first = trimmed[:nl]
		}
		var r rawLine
		if scanNDJSON(trimEOL(first), &r) == nil {
			return FormatNDJSON, nil
		}
		if bytes.Contains(first, []byte(`"Point"`)) || bytes.Contains(first, []byte(`"Metric"`)) {
			// Looks like NDJSON with a broken first line: report it as such.
			return FormatNDJSON, nil
		}
	}
	return formatSummary, nil
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
