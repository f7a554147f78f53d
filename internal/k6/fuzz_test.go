package k6

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

// seedLines adds up to n lines of a fixture file to the corpus.
func seedLines(f *testing.F, path string, n int) {
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			f.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			f.Fatal(err)
		}
	}
	i := 0
	for line := range bytes.Lines(data) {
		if i++; i > n {
			break
		}
		f.Add(bytes.TrimRight(line, "\n"))
	}
}

// FuzzParseNDJSONLine: any input returns a point, a definition or an error,
// never panics, and a point's value is finite.
func FuzzParseNDJSONLine(f *testing.F) {
	seedLines(f, fixtures.Path(f, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"), 60)
	seedLines(f, fixtures.Path(f, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz"), 20)
	f.Add([]byte(`{"data":{"tags":null,"value":1e308,"time":"2026-11-30T10:51:04+02:00"},"type":"Point","metric":"a\u0041"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var p Point
		isPoint, def, err := ParseNDJSONLine(line, &p)
		if err != nil {
			if isPoint || def != nil {
				t.Fatal("error with a result")
			}
			return
		}
		if isPoint == (def != nil) {
			t.Fatalf("isPoint %t with def %v", isPoint, def)
		}
		if isPoint && (math.IsNaN(p.Value) || math.IsInf(p.Value, 0) || p.Metric == "") {
			t.Fatalf("bad point %+v", p)
		}
		// The loader's fast path for k6's canonical line shape agrees with
		// the general scanner, including with its memos warm.
		var gen rawLine
		genErr := scanNDJSON(trimEOL(line), &gen)
		fast := rawLine{useMemo: true}
		for range 2 {
			if scanFast(trimEOL(line), &fast) {
				if genErr != nil || fast.time != gen.time || fast.offset != gen.offset || fast.value != gen.value ||
					!bytes.Equal(fast.metric, gen.metric) || !bytes.Equal(fast.tags, gen.tags) || !bytes.Equal(fast.metadata, gen.metadata) {
					t.Fatalf("fast path %+v, general %+v (%v)", fast, gen, genErr)
				}
			}
		}
		// Parsing again into the used Point gives the same result.
		q := p
		if _, _, err := ParseNDJSONLine(line, &q); err != nil || q.Value != p.Value || !q.Time.Equal(p.Time) || len(q.Tags) != len(p.Tags) {
			t.Fatalf("reparse differs: %v %+v %+v", err, q, p)
		}
	})
}

// fuzzLoad loads input with both strict and lenient options and checks
// that nothing panics and every number is finite.
func fuzzLoad(t *testing.T, name string, input []byte) {
	// One worker: the fuzzing engine wants no goroutines in the target.
	for _, opts := range []LoadOptions{{Workers: 1}, {Workers: 1, Lenient: true, Mode: ModeSketch, GroupBy: "name", Stats: []string{"p(99.9)", "count"}}} {
		r, err := LoadReader(name, bytes.NewReader(input), opts)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name) {
				t.Fatalf("error does not name the file: %v", err)
			}
			checkErrorLine(t, name, input, err)
			continue
		}
		for n, m := range r.Metrics {
			for k, v := range m.Values {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s %s = %v", n, k, v)
				}
			}
		}
		if err := WriteJSON(io.Discard, []*Run{r}, opts.Stats); err != nil {
			t.Fatalf("WriteJSON: %v", err)
		}
		if err := WriteText(io.Discard, []*Run{r}, opts.Stats); err != nil {
			t.Fatalf("WriteText: %v", err)
		}
	}
}

func FuzzLoadSummary(f *testing.F) {
	for _, p := range []string{"runA-summary-export.json", "runA-handlesummary-data.json", "runB-summary-export.json",
		"runC-summary-export-machine-readable.json", "runC-machine-readable-schema.json", "runD-summary-export-machine-readable-full.json", "ictu-handlesummary-data.json"} {
		data, err := os.ReadFile(testFile(f, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLoad(t, "in.json", data) })
}

func FuzzLoadNDJSON(f *testing.F) {
	data, err := os.ReadFile(fixtures.Path(f, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"))
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	f.Add(bytes.Join(lines[:40], nil))
	f.Add(bytes.Join(lines[200:260], nil))
	f.Add(append(bytes.Join(lines[:10], nil), lines[3][:50]...))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLoad(t, "in.ndjson", data) })
}

func FuzzLoadCSV(f *testing.F) {
	for _, p := range []string{"runA-out.csv", "runB-out.csv"} {
		data, err := os.ReadFile(testFile(f, p))
		if err != nil {
			f.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		f.Add(bytes.Join(lines[:40], nil))
	}
	f.Add([]byte("metric_name,timestamp,metric_value,check,extra_tags,metadata\nchecks,1796028664000,1,\"a, \"\"quoted\"\" check\",k=v&x,vu=1\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLoad(t, "in.csv", data) })
}

// checkErrorLine: a "file:N:" error names a line that exists and has
// content, never the empty line after a final newline (a JSON decoder's
// offset counts the offending byte, which, taken as is, names line 2 of a
// one-line file). "no samples" names the end of the stream instead.
func checkErrorLine(t *testing.T, name string, input []byte, err error) {
	msg := strings.TrimPrefix(err.Error(), name+":")
	colon := strings.IndexByte(msg, ':')
	if colon <= 0 || len(input) > 1 && input[0] == 0x1f && input[1] == 0x8b || strings.Contains(msg, "no samples") {
		return // no line number, or one counted in the unpacked gzip stream
	}
	n, convErr := strconv.Atoi(msg[:colon])
	if convErr != nil {
		return
	}
	last := 1 // the line of the last byte that is not white space
	if i := bytes.LastIndexFunc(input, func(r rune) bool { return !strings.ContainsRune(" \t\r\n", r) }); i >= 0 {
		last = bytes.Count(input[:i], []byte{'\n'}) + 1
	}
	if n < 1 || n > last {
		t.Fatalf("error names line %d, the input's last line with content is %d: %v", n, last, err)
	}
}

// FuzzNumberAgainstEncodingJSON: the scanner's number reader accepts
// exactly the inputs encoding/json decodes as a finite number, and reads
// the same float64 to the bit.
func FuzzNumberAgainstEncodingJSON(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "-1", "01", "-01", "+1", "00", "1.", ".5", "-.5", "1.5", "1e5", "1E-2", "1e+3", "1e", "1e+",
		"-", "1.526667", "123456789012345678", "0.1", "1e400", "1e-400", "4.9e-324", " 7 ", "1 2", "1-", "1.2.3", "0x10", "1_000"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		sc := scanner{b: in}
		got, err := sc.num("value")
		sc.ws()
		ours := err == nil && sc.i == len(in)

		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var x any
		theirs := false
		var want float64
		if dec.Decode(&x) == nil {
			if _, end := dec.Token(); end == io.EOF {
				if n, ok := x.(json.Number); ok {
					v, err := n.Float64()
					if err == nil && !math.IsInf(v, 0) {
						theirs, want = true, v
					}
				}
			}
		}
		if ours != theirs {
			t.Fatalf("%q: scanner accepts %t (err %v), encoding/json %t", in, ours, err, theirs)
		}
		if ours && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: scanner reads %v, encoding/json %v", in, got, want)
		}
	})
}
