package k6

import (
	"bytes"
	"compress/gzip"
	"os"
	"strings"
	"testing"
)

const (
	metricLine = `{"type":"Metric","data":{"name":"http_req_duration","type":"trend","contains":"time","thresholds":[],"submetrics":null},"metric":"http_req_duration"}`
	pointLine  = `{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-30T08:51:04.034267023Z","value":1.5,"tags":{"name":"home"}}}`
	csvHeader  = "metric_name,timestamp,metric_value,check,group,name,extra_tags,metadata"
)

func gz(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	// Writes to a bytes.Buffer cannot fail; gzip.Writer has no other source of error.
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.String()
}

// Bad input fails with the file, the line and the field; with Lenient the
// bad lines are skipped and counted instead.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name    string
		content string
		err     string // substrings, "|"-separated
		skipped int    // in lenient mode; -1 = still an error
	}{
		{"empty file", "", "bad.txt:1: empty file", -1},
		{"only blanks", "\n  \n", "bad.txt:1: empty file", -1},
		{"not k6 output", "hello world\n", "bad.txt:1: not k6 output", -1},
		{"json but not k6", `{"foo": 1}`, "bad.txt:1: not k6 output", -1},
		{"truncated summary", `{"metrics": {"http_reqs": {"count": 1, `, "bad.txt:1: truncated JSON", -1},
		{"summary wrong type", "{\n\"metrics\": {\n\"http_reqs\": {\"count\": \"many\", \"rate\": 1}}}", `bad.txt:3: metric "http_reqs" field "count"`, -1},
		{"handleSummary unknown type", `{"metrics":{"x":{"type":"histogram","contains":"default","values":{}}},"state":{"testRunDurationMs":1}}`, `metric "x": field "type": unknown metric type`, -1},
		{"truncated ndjson line", metricLine + "\n" + pointLine + "\n" + pointLine[:60] + "\n", "bad.txt:3: |truncated", 1},
		{"NaN value", metricLine + "\n" + strings.Replace(pointLine, "1.5", "NaN", 1) + "\n" + pointLine + "\n", `bad.txt:2: field "data.value"`, 1},
		{"Inf value", metricLine + "\n" + strings.Replace(pointLine, "1.5", "Infinity", 1) + "\n" + pointLine, `bad.txt:2: field "data.value"`, 1},
		{"wrong type", metricLine + "\n" + strings.Replace(pointLine, "1.5", `"1.5"`, 1) + "\n" + pointLine, `bad.txt:2: field "data.value"`, 1},
		{"unknown metric type", strings.Replace(metricLine, `"trend"`, `"histogram"`, 1) + "\n" + pointLine, `bad.txt:1: field "data.type"`, 1},
		{"point before its metric line", strings.Replace(pointLine, "http_req_duration", "custom", 1) + "\n" + pointLine, `bad.txt:1: field "metric": "custom" has no Metric line`, 1},
		{"broken gzip", gz(metricLine + "\n" + pointLine + "\n")[:40], "bad.txt: broken gzip stream", -1},
		{"csv bad value", csvHeader + "\nhttp_reqs,1796028664,1.000000,,,home,,\nhttp_reqs,1796028664,NaN,,,home,,\n", `bad.txt:3: field "metric_value"`, 1},
		{"csv bad time", csvHeader + "\nhttp_reqs,soon,1.000000,,,home,,\nhttp_reqs,1796028664,1,,,home,,\n", `bad.txt:2: field "timestamp"`, 1},
		{"csv short row", csvHeader + "\nhttp_reqs,1796028664,1.000000\nhttp_reqs,1796028664,1,,,home,,\n", "bad.txt:2: want 8 fields", 1},
		{"csv header without value", "metric_name,timestamp\nx,1\n", `bad.txt:1: CSV header: no column "metric_value"`, -1},
		{"all lines bad", metricLine + "\n" + pointLine[:50] + "\n", "bad.txt:2:", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, lenient := range []bool{false, true} {
				r, err := LoadReader("bad.txt", strings.NewReader(c.content), LoadOptions{Lenient: lenient})
				if lenient && c.skipped >= 0 {
					if err != nil {
						t.Fatalf("lenient: %v", err)
					}
					if r.Skipped != c.skipped {
						t.Errorf("lenient: skipped %d, want %d", r.Skipped, c.skipped)
					}
					continue
				}
				if err == nil {
					t.Fatalf("lenient=%t: no error", lenient)
				}
				if lenient && c.name == "all lines bad" {
					if !strings.Contains(err.Error(), "bad.txt: no samples: all 1 lines with data were bad") {
						t.Errorf("lenient, all bad: %v", err)
					}
					continue
				}
				for _, want := range strings.Split(c.err, "|") {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("lenient=%t: error %q does not contain %q", lenient, err, want)
					}
				}
			}
		})
	}
}

// The first bad line in file order is reported, even when it sits in a
// later chunk than another worker's error.
func TestFirstErrorInFileOrder(t *testing.T) {
	var b strings.Builder
	b.WriteString(metricLine + "\n")
	for range 20000 { // several chunks
		b.WriteString(pointLine + "\n")
	}
	b.WriteString(pointLine[:40] + "\n")
	for range 20000 {
		b.WriteString(pointLine + "\n")
	}
	b.WriteString("{}\n")
	_, err := LoadReader("big.ndjson", strings.NewReader(b.String()), LoadOptions{Workers: 2})
	if err == nil || !strings.HasPrefix(err.Error(), "big.ndjson:20002:") {
		t.Fatalf("got %v, want the error at line 20002", err)
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.json", LoadOptions{})
	if !os.IsNotExist(err) {
		t.Fatalf("got %v", err)
	}
}

// A line longer than a chunk (a huge URL tag) is read whole.
func TestLongLine(t *testing.T) {
	long := strings.Replace(pointLine, `"name":"home"`, `"name":"`+strings.Repeat("x", 3<<20)+`"`, 1)
	in := metricLine + "\n" + pointLine + "\n" + long + "\n" + pointLine + "\n"
	r, err := LoadReader("long.ndjson", strings.NewReader(in), LoadOptions{Stats: []string{"count"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Metrics["http_req_duration"].Values["count"]; got != 3 {
		t.Errorf("count %v, want 3", got)
	}
}
