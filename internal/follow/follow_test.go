package follow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// testPoll is the poll interval of the followers started by start.
const testPoll = 5 * time.Millisecond

// collector gathers lines and reopen reasons from a running Lines.
type collector struct {
	mu      sync.Mutex
	lines   []string
	reasons []string
	waits   int
}

func (c *collector) snapshot() ([]string, []string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...), append([]string(nil), c.reasons...), c.waits
}

func start(t *testing.T, path string) (*collector, func() error) {
	t.Helper()
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- Lines(ctx, path, Options{
			Poll:     testPoll,
			OnReopen: func(r string) { c.mu.Lock(); c.reasons = append(c.reasons, r); c.mu.Unlock() },
			OnWait:   func() { c.mu.Lock(); c.waits++; c.mu.Unlock() },
		}, func(b []byte) { c.mu.Lock(); c.lines = append(c.lines, string(b)); c.mu.Unlock() })
	}()
	return c, func() error { cancel(); return <-errc }
}

// waitFor polls until the collector holds want lines (no timing asserted:
// the deadline only stops a broken test).
func waitFor(t *testing.T, c *collector, want int) []string {
	t.Helper()
	return waitLines(t, c, want, true)
}

// waitLines is waitFor and waitCount; show puts the lines in the failure.
func waitLines(t *testing.T, c *collector, want int, show bool) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lines, _, _ := c.snapshot()
		if len(lines) >= want {
			return lines
		}
		if time.Now().After(deadline) {
			if show {
				t.Fatalf("got %d lines %q, want %d", len(lines), lines, want)
			}
			t.Fatalf("got %d lines, want %d", len(lines), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFollow(t *testing.T) {
	for _, c := range []struct {
		name    string
		steps   func(t *testing.T, path string, c *collector)
		want    []string
		reasons []string
		waited  bool
	}{
		{
			name: "grows, partial line held back",
			steps: func(t *testing.T, path string, c *collector) {
				appendTo(t, path, "a\nb")
				waitFor(t, c, 1)
				appendTo(t, path, "c\r\nd\n")
				waitFor(t, c, 3)
			},
			want: []string{"a", "bc", "d"},
		},
		{
			name: "truncated",
			steps: func(t *testing.T, path string, c *collector) {
				appendTo(t, path, "one\ntwo\n")
				waitFor(t, c, 2)
				if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				waitFor(t, c, 3)
			},
			want:    []string{"one", "two", "x"},
			reasons: []string{Truncated},
		},
		{
			name: "rotated by rename, old tail read first",
			steps: func(t *testing.T, path string, c *collector) {
				appendTo(t, path, "1\n")
				waitFor(t, c, 1)
				// The writer finishes the old file, then it is renamed away
				// and a new one starts, before the follower looks again.
				appendTo(t, path, "2\n")
				if err := os.Rename(path, path+".1"); err != nil {
					t.Fatal(err)
				}
				appendTo(t, path, "3\n")
				waitFor(t, c, 3)
			},
			want:    []string{"1", "2", "3"},
			reasons: []string{Rotated},
		},
		{
			name: "removed and recreated",
			steps: func(t *testing.T, path string, c *collector) {
				appendTo(t, path, "old\n")
				waitFor(t, c, 1)
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
				appendTo(t, path, "new\n")
				waitFor(t, c, 2)
			},
			want:    []string{"old", "new"},
			reasons: []string{Rotated},
		},
		{
			name: "waits for the file",
			steps: func(t *testing.T, path string, c *collector) {
				for {
					if _, _, w := c.snapshot(); w > 0 {
						break
					}
					time.Sleep(time.Millisecond)
				}
				appendTo(t, path, "late\n")
				waitFor(t, c, 1)
			},
			want:   []string{"late"},
			waited: true,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.ndjson")
			if !c.waited {
				appendTo(t, path, "")
			}
			col, stop := start(t, path)
			c.steps(t, path, col)
			if err := stop(); err != context.Canceled {
				t.Errorf("Lines returned %v, want context.Canceled", err)
			}
			lines, reasons, waits := col.snapshot()
			if strings.Join(lines, "|") != strings.Join(c.want, "|") {
				t.Errorf("lines %q, want %q", lines, c.want)
			}
			if strings.Join(reasons, "|") != strings.Join(c.reasons, "|") {
				t.Errorf("reopen reasons %q, want %q", reasons, c.reasons)
			}
			if (waits > 0) != c.waited {
				t.Errorf("waited %d times, want waiting %v", waits, c.waited)
			}
		})
	}
}

func TestStdin(t *testing.T) {
	var got []string
	err := Lines(context.Background(), "-", Options{Stdin: strings.NewReader("a\nb\r\n\nlast")}, func(b []byte) { got = append(got, string(b)) })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "a|b||last" {
		t.Errorf("got %q", got)
	}
}

func TestGzipRefused(t *testing.T) {
	err := Lines(context.Background(), "run.ndjson.gz", Options{}, func([]byte) {})
	if err == nil || !strings.Contains(err.Error(), "run.ndjson.gz") {
		t.Errorf("err = %v", err)
	}
}

// A file truncated and refilled past its old size between two polls is
// read again from the top: every line of both contents arrives once,
// whatever part of a line tells one line from another.
func TestTruncateRefillWithinPoll(t *testing.T) {
	tags := strings.Repeat(`"tag":"same-everywhere",`, 8)
	for _, c := range []struct {
		name string
		line func(i int) string
		a, b int // lines before and after the refill
	}{
		{"unique middle, differing tags", func(i int) string {
			return fmt.Sprintf(`{"metric":"http_reqs","data":{"value":1,"i":"%06d","pad":"%s"}}`, i, strings.Repeat("x", i%7))
		}, 2000, 2000},
		// Fixed width, the counter first and a long identical tail: the
		// last bytes before the offset are the same in both contents.
		{"fixed width, identical tails", func(i int) string {
			return fmt.Sprintf(`{"i":%08d,"data":{%s"end":1}}`, i, tags)
		}, 2000, 2500},
		// The same size as before: the size cannot tell.
		{"same size", func(i int) string {
			return fmt.Sprintf(`{"i":%08d,"data":{%s"end":1}}`, i, tags)
		}, 2000, 2000},
		// A refill that starts like the old content (a header) and
		// differs later.
		{"same first lines", func(i int) string {
			if i%2000 < 50 {
				return fmt.Sprintf(`{"type":"Metric","metric":"m%02d","data":{%s"end":1}}`, i%2000, tags)
			}
			return fmt.Sprintf(`{"i":%08d,"data":{%s"end":1}}`, i, tags)
		}, 2000, 2400},
	} {
		t.Run(c.name, func(t *testing.T) {
			var a, b strings.Builder
			for i := range c.a {
				a.WriteString(c.line(i) + "\n")
			}
			for i := c.a; i < c.a+c.b; i++ {
				b.WriteString(c.line(i) + "\n")
			}
			refill(t, a.String(), b.String())
		})
	}
}

// refill follows a file holding a, truncates and refills it with b
// within one poll, and checks that every line of a then b arrived once.
func refill(t *testing.T, a, b string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.ndjson")
	if err := os.WriteFile(path, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(a+b, "\n"), "\n")
	nA := strings.Count(a, "\n")
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- Lines(ctx, path, Options{
			Poll:     time.Second, // far slower than the refill below
			OnReopen: func(r string) { c.mu.Lock(); c.reasons = append(c.reasons, r); c.mu.Unlock() },
		}, func(l []byte) { c.mu.Lock(); c.lines = append(c.lines, string(l)); c.mu.Unlock() })
	}()
	waitCount(t, c, nA)
	// Truncate and refill at once (O_TRUNC then one write).
	if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	waitCount(t, c, len(want))
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("Lines returned %v, want context.Canceled", err)
	}
	lines, reasons, _ := c.snapshot()
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Fatalf("line %d: %q, want %q", i, lines[i], want[i])
		}
	}
	if len(reasons) != 1 || reasons[0] != Truncated {
		t.Errorf("reopen reasons %v, want one %q", reasons, Truncated)
	}
}

// waitCount is waitFor reporting only how many lines arrived (for runs
// of thousands of lines).
func waitCount(t *testing.T, c *collector, want int) []string {
	t.Helper()
	return waitLines(t, c, want, false)
}

// A k6 output refilled with byte-identical content is a new run: read
// again from the start, every line exactly twice, when a poll sees the
// truncation before the refill (its size drops) or when the file is
// renamed away and replaced (a new inode), whatever the content.
func TestIdenticalRefill(t *testing.T) {
	run, err := os.ReadFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(run), "\n"), "\n")
	for _, c := range []struct {
		name   string
		replay func(t *testing.T, path string, c *collector)
		reason string
	}{
		{"truncated, polled, refilled", func(t *testing.T, path string, c *collector) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			waitReason(t, c) // a poll has seen the size drop
			appendTo(t, path, string(run))
		}, Truncated},
		{"renamed and replaced", func(t *testing.T, path string, _ *collector) {
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			appendTo(t, path, string(run))
		}, Rotated},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.ndjson")
			appendTo(t, path, string(run))
			col, stop := start(t, path)
			waitCount(t, col, len(lines))
			c.replay(t, path, col)
			waitCount(t, col, 2*len(lines))
			// Polls go on: nothing is read a third time.
			time.Sleep(20 * testPoll)
			if err := stop(); err != context.Canceled {
				t.Errorf("Lines returned %v, want context.Canceled", err)
			}
			got, reasons, _ := col.snapshot()
			if len(got) != 2*len(lines) {
				t.Fatalf("%d lines, want %d (the run's %d twice)", len(got), 2*len(lines), len(lines))
			}
			for i, l := range got {
				if l != lines[i%len(lines)] {
					t.Fatalf("line %d: %.80q, want %.80q", i, l, lines[i%len(lines)])
				}
			}
			if len(reasons) != 1 || reasons[0] != c.reason {
				t.Errorf("reopen reasons %q, want one %q", reasons, c.reason)
			}
		})
	}
}

// waitReason waits until a reopen was seen.
func waitReason(t *testing.T, c *collector) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, r, _ := c.snapshot(); len(r) > 0 {
			return
		}
	}
	t.Fatal("no poll saw the truncation")
}

// A file truncated and refilled with the same bytes while the follower is
// still reading it, and found smaller than before by a later look, though
// already past the read offset again, is read again from the start: the
// lines handed over before that look, then every line of the refill.
func TestIdenticalRefillSeenShrunk(t *testing.T) {
	run, err := os.ReadFile(fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(run), "\n"), "\n")
	// The refill stops at a line boundary three quarters in: far past what
	// the follower has read when it is held at the first line, short of
	// the old size.
	cut := strings.LastIndexByte(string(run[:len(run)*3/4]), '\n') + 1
	path := filepath.Join(t.TempDir(), "out.ndjson")
	appendTo(t, path, string(run))

	c := &collector{}
	held, release := make(chan struct{}), make(chan struct{})
	before := -1 // lines handed over when the truncation was seen
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- Lines(ctx, path, Options{
			Poll: testPoll,
			OnReopen: func(r string) {
				c.mu.Lock()
				c.reasons = append(c.reasons, r)
				before = len(c.lines)
				c.mu.Unlock()
			},
		}, func(l []byte) {
			c.mu.Lock()
			c.lines = append(c.lines, string(l))
			first := len(c.lines) == 1
			c.mu.Unlock()
			if first {
				close(held)
				<-release
			}
		})
	}()
	<-held
	if err := os.WriteFile(path, run[:cut], 0o644); err != nil { // truncate, refill part
		t.Fatal(err)
	}
	close(release)
	// Either the truncation is seen, or (missed) the first content is read
	// on up to the cut; then the refill is completed.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		got, reasons, _ := c.snapshot()
		if len(reasons) > 0 || len(got) >= strings.Count(string(run[:cut]), "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower neither saw the truncation nor read on")
		}
	}
	appendTo(t, path, string(run[cut:]))
	waitCount(t, c, len(lines))
	time.Sleep(20 * testPoll) // polls go on; nothing more is read
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("Lines returned %v, want context.Canceled", err)
	}
	got, reasons, _ := c.snapshot()
	if len(reasons) != 1 || reasons[0] != Truncated || before < 1 || before >= len(lines) {
		t.Fatalf("reopen reasons %q after %d lines; want one %q part-way through the first content (%d lines), then the refill (%d lines, %d read in all)",
			reasons, before, Truncated, len(lines), len(lines), len(got))
	}
	if len(got) != before+len(lines) {
		t.Fatalf("%d lines, want %d: %d before the truncation was seen, then the refill's %d", len(got), before+len(lines), before, len(lines))
	}
	for i, l := range got {
		j := i // the first content's lines, then the refill's
		if i >= before {
			j = i - before
		}
		if want := lines[j]; l != want {
			t.Fatalf("line %d: %.80q, want %.80q", i, l, want)
		}
	}
}
