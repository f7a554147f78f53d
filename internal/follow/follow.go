// Package follow reads the lines of a file that another process is still
// writing, as `tail -F` does: it waits for the file to appear, reads it
// from the start, keeps reading as it grows, starts again from the top
// when it is truncated, and moves to the new file when the path is
// rotated (renamed away or removed and recreated), after finishing the
// old one. "-" reads standard input to its end.
//
// A truncation is seen when any look at the file finds it smaller than
// at an earlier look, or finds the first bytes read, or those just
// before the read offset, changed. A file truncated and refilled to the
// same or a larger size between two looks, with the same bytes where
// they are compared, cannot be told from one that grew: k6 writes a
// nanosecond timestamp on every sample, so a new run's lines differ from
// the last one's.
//
// Only complete lines are handed over: a line still being written stays
// buffered until its newline arrives.
package follow

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// DefaultPoll is how often a file at its end is checked for growth.
const DefaultPoll = 250 * time.Millisecond

// MaxLine is the longest line kept; longer lines are handed over cut.
const MaxLine = 1 << 20

// Reopen reasons passed to Options.OnReopen.
const (
	Truncated = "truncated"
	Rotated   = "rotated"
)

// Options tune Lines.
type Options struct {
	Poll     time.Duration       // 0 = DefaultPoll
	OnReopen func(reason string) // truncation or rotation seen
	OnWait   func()              // the file does not exist (yet); called once per wait
	Stdin    io.Reader           // for "-"; nil = os.Stdin
}

// Lines calls fn with each complete line (without its newline) of path
// until ctx ends, which returns ctx.Err(). For "-" it returns nil at the
// end of input. fn must not keep the slice.
func Lines(ctx context.Context, path string, opts Options, fn func([]byte)) error {
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.OnReopen == nil {
		opts.OnReopen = func(string) {}
	}
	if opts.OnWait == nil {
		opts.OnWait = func() {}
	}
	if path == "-" {
		in := opts.Stdin
		if in == nil {
			in = os.Stdin
		}
		return stdin(ctx, in, fn)
	}
	if strings.HasSuffix(path, ".gz") {
		return fmt.Errorf("%s: a gzip file cannot be followed; load it as a finished result", path)
	}
	t := &tailer{ctx: ctx, path: path, opts: opts, fn: fn, buf: make([]byte, 64<<10)}
	return t.run()
}

func stdin(ctx context.Context, in io.Reader, fn func([]byte)) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			// Too long for the buffer: hand over what fits, drop the rest.
			fn(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			line = nil
		}
		if len(line) > 0 {
			fn(bytes.TrimRight(line, "\r\n"))
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

type tailer struct {
	ctx  context.Context
	path string
	opts Options
	fn   func([]byte)

	f       *os.File
	info    os.FileInfo
	off     int64  // bytes consumed from f
	seen    int64  // the largest size of f seen, at least off
	buf     []byte // read buffer
	partial []byte // incomplete last line
	head    []byte // the first bytes consumed from this file
	tail    []byte // the last bytes consumed, ending at off
	check   []byte // scratch for replaced
}

// windowLen is how many consumed bytes are kept at each end to recognise
// the file's content. A refilled file differs from what was read in some
// line; the window spans whole lines (k6 writes a few hundred bytes a
// line), so a line that differs anywhere, not only in its last bytes, is
// seen. Both ends are checked: the start catches a refill that overtook
// the reader in the middle of a read.
const windowLen = 4 << 10

func (t *tailer) sleep() error {
	select {
	case <-t.ctx.Done():
		return t.ctx.Err()
	case <-time.After(t.opts.Poll):
		return nil
	}
}

// open waits for the path to exist and opens it from the start.
func (t *tailer) open() error {
	waited := false
	for {
		f, err := os.Open(t.path)
		if err == nil {
			info, err := f.Stat()
			if err != nil {
				_ = f.Close() // only read
				return err
			}
			t.f, t.info, t.off, t.seen, t.partial, t.head, t.tail = f, info, 0, info.Size(), t.partial[:0], t.head[:0], t.tail[:0]
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if !waited {
			t.opts.OnWait()
			waited = true
		}
		if err := t.sleep(); err != nil {
			return err
		}
	}
}

func (t *tailer) run() error {
	if err := t.open(); err != nil {
		return err
	}
	defer func() { _ = t.f.Close() }() // only read
	for {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		shrunk, err := t.shrunk()
		if err != nil {
			return err
		}
		if shrunk || t.replaced() {
			// Smaller than before, or refilled past the old size between
			// two looks (the content read no longer matches): a new file.
			if err := t.restart(); err != nil {
				return err
			}
		}
		n, err := t.drain()
		if err != nil {
			return err
		}
		if n > 0 {
			continue // more may be there already
		}
		// At the end: check what happened to the path.
		cur, err := os.Stat(t.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Removed: wait for the next file (the old one is finished).
			if err := t.sleep(); err != nil {
				return err
			}
			if _, err := os.Stat(t.path); err == nil {
				// Finish what was written to the old file before its rename.
				if _, err := t.drain(); err != nil {
					return err
				}
				t.reopen(Rotated)
				if err := t.open(); err != nil {
					return err
				}
			}
			continue
		case err != nil:
			return err
		case !os.SameFile(cur, t.info):
			// Renamed away and replaced: finish the old file, then switch.
			if _, err := t.drain(); err != nil {
				return err
			}
			t.reopen(Rotated)
			if err := t.open(); err != nil {
				return err
			}
			continue
		}
		if err := t.sleep(); err != nil {
			return err
		}
	}
}

// restart reads the (truncated) file again from its start.
func (t *tailer) restart() error {
	t.opts.OnReopen(Truncated)
	if _, err := t.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	t.off, t.seen, t.partial, t.head, t.tail = 0, 0, t.partial[:0], t.head[:0], t.tail[:0]
	return nil
}

// shrunk reports whether the open file is smaller than it was at an
// earlier look (or than the bytes read from it): truncated, whether or
// not it has been refilled past the read offset since. A k6 output only
// grows.
func (t *tailer) shrunk() (bool, error) {
	info, err := t.f.Stat()
	if err != nil {
		return false, err
	}
	if info.Size() < max(t.seen, t.off) {
		return true, nil
	}
	t.seen = info.Size()
	return false, nil
}

// replaced reports whether the bytes at the start of the file or just
// before the offset are no longer those consumed there: the file was
// truncated and refilled.
func (t *tailer) replaced() bool {
	return t.differs(t.head, 0) || t.differs(t.tail, t.off-int64(len(t.tail)))
}

// differs reports whether the file's bytes at off are not want.
func (t *tailer) differs(want []byte, off int64) bool {
	if len(want) == 0 {
		return false
	}
	if cap(t.check) < len(want) {
		t.check = make([]byte, windowLen)
	}
	b := t.check[:len(want)]
	n, err := t.f.ReadAt(b, off)
	if n < len(b) {
		return err != nil // shorter now: truncated
	}
	return !bytes.Equal(b, want)
}

func (t *tailer) reopen(reason string) {
	_ = t.f.Close() // only read
	t.opts.OnReopen(reason)
}

// drain reads what is available and hands over complete lines.
func (t *tailer) drain() (int, error) {
	total := 0
	for {
		n, err := t.f.Read(t.buf)
		if n > 0 {
			total += n
			t.off += int64(n)
			t.remember(t.buf[:n])
			t.lines(t.buf[:n])
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// remember keeps the first and the last windowLen bytes consumed.
func (t *tailer) remember(b []byte) {
	if n := windowLen - len(t.head); n > 0 {
		t.head = append(t.head, b[:min(n, len(b))]...)
	}
	if len(b) >= windowLen {
		t.tail = append(t.tail[:0], b[len(b)-windowLen:]...)
		return
	}
	t.tail = append(t.tail, b...)
	if over := len(t.tail) - windowLen; over > 0 {
		t.tail = append(t.tail[:0], t.tail[over:]...)
	}
}

func (t *tailer) lines(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(t.partial)+len(b) <= MaxLine {
				t.partial = append(t.partial, b...)
			}
			return
		}
		line := b[:i]
		if len(t.partial) > 0 {
			if len(t.partial)+len(line) <= MaxLine {
				t.partial = append(t.partial, line...)
			}
			line = t.partial
		}
		t.fn(bytes.TrimRight(line, "\r"))
		t.partial = t.partial[:0]
		b = b[i+1:]
	}
}
