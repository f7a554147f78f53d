package k6

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

// Input is an opened k6 result stream: a gzip stream (k6 writes one for a
// ".gz" name) is unpacked, told apart by its magic bytes, not its name.
type Input struct {
	Name string // file name for errors ("-" for stdin)
	*bufio.Reader
	close []func() error
}

// OpenInput opens a result file ("-" for stdin) for reading.
func OpenInput(path string) (*Input, error) {
	if path == "-" {
		return NewInput("-", os.Stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	in, err := NewInput(path, f)
	if err != nil {
		_ = f.Close() // only read
		return nil, err
	}
	in.close = append(in.close, f.Close)
	return in, nil
}

// NewInput reads a result stream from r; name is used in errors.
func NewInput(name string, r io.Reader) (*Input, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	in := &Input{Name: name, Reader: br}
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: broken gzip stream: %v", name, err)
		}
		in.Reader = bufio.NewReaderSize(&gzipLines{gz: gz}, 64<<10)
		in.close = append(in.close, gz.Close)
	}
	return in, nil
}

// gzipLines unpacks a gzip stream counting the lines unpacked, so a
// stream that breaks (a file cut short, a bad checksum) says where.
type gzipLines struct {
	gz    *gzip.Reader
	lines int64
}

func (g *gzipLines) Read(p []byte) (int, error) {
	n, err := g.gz.Read(p)
	g.lines += int64(bytes.Count(p[:n], []byte{'\n'}))
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("%w: the file is cut short in line %d of the unpacked text (after %d complete lines)", err, g.lines+1, g.lines)
	case err != nil && err != io.EOF:
		err = fmt.Errorf("%w in line %d of the unpacked text", err, g.lines+1)
	}
	return n, err
}

// Close releases the gzip reader and the file OpenInput opened.
func (in *Input) Close() error {
	var errs []error
	for i := len(in.close) - 1; i >= 0; i-- {
		errs = append(errs, in.close[i]())
	}
	in.close = nil
	return errors.Join(errs...)
}

// LineError is a bad line of a point stream: the file, the line (from 1)
// and the parser's error, which names the field.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ErrLineTooLong is a LineError's Err for a line longer than the reader's
// MaxLine; k6 never writes one.
var ErrLineTooLong = errors.New("line too long")

// BadLinePolicy decides what a bad line does: a nil return skips it, an
// error stops the reader with that error.
type BadLinePolicy func(*LineError) error

// FailOnBadLine stops at the first bad line with its file, line and field.
func FailOnBadLine(e *LineError) error { return e }

// DefaultMaxLine is the longest line a PointReader takes unless told.
const DefaultMaxLine = 1 << 20

// PointReader reads k6 --out json (NDJSON) lines one by one and hands each
// Point and Metric line to its callbacks, with line numbers and a policy
// for bad lines. The Point passed to OnPoint is reused (its tag maps too):
// copy what must outlive the call.
type PointReader struct {
	Name     string                 // file name in errors
	OnPoint  func(p *Point) error   // nil ignores points
	OnMetric func(*MetricDef) error // nil ignores Metric lines
	OnBad    BadLinePolicy          // nil is FailOnBadLine
	MaxLine  int                    // longest line in bytes; 0 is DefaultMaxLine

	line int
	p    Point
	long []byte
}

// Line is the number of the last line read.
func (r *PointReader) Line() int { return r.line }

// Feed takes the next line (its newline optional). Blank lines are
// skipped. Errors from the callbacks stop the reader as a *LineError.
func (r *PointReader) Feed(line []byte) error {
	r.line++
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	isPoint, def, err := ParseNDJSONLine(line, &r.p)
	if err != nil {
		return r.bad(err)
	}
	switch {
	case isPoint && r.OnPoint != nil:
		err = r.OnPoint(&r.p)
	case !isPoint && def != nil && r.OnMetric != nil:
		err = r.OnMetric(def)
	}
	if err != nil {
		return &LineError{File: r.Name, Line: r.line, Err: err}
	}
	return nil
}

func (r *PointReader) bad(err error) error {
	e := &LineError{File: r.Name, Line: r.line, Err: err}
	if r.OnBad == nil {
		return e
	}
	return r.OnBad(e)
}

// Read feeds every line of in until its end. A read error (a truncated
// gzip stream) is returned with the line it happened on.
func (r *PointReader) Read(in *Input) error {
	max := r.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	for {
		line, err := in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.longLine(in, line, max)
		}
		if len(bytes.TrimRight(line, "\r\n")) > max {
			r.line++
			if berr := r.bad(fmt.Errorf("%w: longer than %d bytes", ErrLineTooLong, max)); berr != nil {
				return berr
			}
		} else if len(line) > 0 {
			if ferr := r.Feed(line); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return readError(fmt.Sprintf("%s:%d", r.Name, r.line+1), err)
		}
	}
}

// longLine gathers a line longer than the read buffer, keeping at most
// max+1 bytes of it (enough to tell it is too long) however long it is.
func (r *PointReader) longLine(in *Input, part []byte, max int) ([]byte, error) {
	r.long = append(r.long[:0], part...)
	err := bufio.ErrBufferFull
	for errors.Is(err, bufio.ErrBufferFull) {
		part, err = in.ReadSlice('\n')
		if len(r.long) <= max {
			r.long = append(r.long, part...)
		}
	}
	if len(r.long) > max+1 {
		r.long = r.long[:max+1]
	}
	return r.long, err
}

// ReadPointsFile reads a point stream file ("-" for stdin, plain or gzip)
// through r, naming it in errors unless r.Name is set.
func ReadPointsFile(path string, r *PointReader) error {
	in, err := OpenInput(path)
	if err != nil {
		return err
	}
	defer in.Close() //nolint:errcheck // only read
	if r.Name == "" {
		r.Name = path
	}
	return r.Read(in)
}
