package k6

import (
	"errors"
	"io"
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
}

// ErrNotImplemented is returned while a loader is being built.
var ErrNotImplemented = errors.New("not implemented")

// Load reads one k6 result file ("-" for stdin), detecting its format.
func Load(path string, opts LoadOptions) (*Run, error) {
	return nil, ErrNotImplemented
}

// LoadReader reads one k6 result from r; name is used in errors and Run.Source.
func LoadReader(name string, r io.Reader, opts LoadOptions) (*Run, error) {
	return nil, ErrNotImplemented
}

// ParseNDJSONLine decodes one --out json line without allocating for the
// common shapes. It fills p and returns (true, nil, nil) for a Point line,
// or (false, def, nil) for a Metric line. Errors name the field.
func ParseNDJSONLine(line []byte, p *Point) (isPoint bool, def *MetricDef, err error) {
	return false, nil, ErrNotImplemented
}
