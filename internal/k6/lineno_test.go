package k6

import (
	"strings"
	"testing"
)

// Every load error names the line that is bad, whatever the line endings
// and whether the file ends with a newline. The JSON decoder reports the
// offset just past the offending byte, so a trailing newline after a
// truncated document must not push the line past the bad one.
func TestErrorLineNumbers(t *testing.T) {
	csvRow := "http_reqs,1796028664,1.000000,,,home,,"
	docLines := []string{ // a summary export spread over five lines
		`{`,
		`"metrics": {`,
		`"http_reqs": {"count": 1, "rate": 2}`,
		`}`,
		`}`,
	}
	// withLine replaces line n (1-based) of lines and joins them with eol.
	withLine := func(lines []string, n int, bad, eol string, final bool) string {
		out := append([]string(nil), lines...)
		if n > 0 {
			out[n-1] = bad
		}
		s := strings.Join(out, eol)
		if final {
			s += eol
		}
		return s
	}
	ndLines := []string{metricLine, pointLine, pointLine, pointLine, pointLine}
	csvLines := []string{csvHeader, csvRow, csvRow, csvRow, csvRow}
	cases := []struct {
		name    string
		content string
		line    string // "name:N:" prefix expected
	}{
		// NDJSON
		{"ndjson lone bad line, newline", "{\"bad\n", "x:1:"},
		{"ndjson lone bad line, no newline", `{"bad`, "x:1:"},
		{"ndjson lone bad line, CRLF", "{\"bad\r\n", "x:1:"},
		{"ndjson broken first Point line", pointLine[:60] + "\n" + pointLine + "\n", "x:1:"},
		{"ndjson bad line 3 of 5", withLine(ndLines, 3, pointLine[:60], "\n", true), "x:3:"},
		{"ndjson bad value line 3 of 5", withLine(ndLines, 3, strings.Replace(pointLine, "1.5", "NaN", 1), "\n", true), "x:3:"},
		{"ndjson bad line 3 of 5, CRLF", withLine(ndLines, 3, pointLine[:60], "\r\n", true), "x:3:"},
		{"ndjson bad line 5 of 5, CRLF, no final newline", withLine(ndLines, 5, pointLine[:60], "\r\n", false), "x:5:"},
		{"ndjson truncated last line, no newline", withLine(ndLines, 5, pointLine[:60], "\n", false), "x:5:"},
		{"ndjson bad line after blank lines", metricLine + "\n\n\n" + pointLine[:60] + "\n", "x:4:"},
		// CSV: the header is line 1.
		{"csv lone bad row, newline", csvHeader + "\nhttp_reqs,soon,1,,,home,,\n", "x:2:"},
		{"csv lone bad row, no newline", csvHeader + "\nhttp_reqs,soon,1,,,home,,", "x:2:"},
		{"csv bad row 3 of 5", withLine(csvLines, 3, "http_reqs,1796028664,NaN,,,home,,", "\n", true), "x:3:"},
		{"csv bad row 3 of 5, CRLF", withLine(csvLines, 3, "http_reqs,1796028664,NaN,,,home,,", "\r\n", true), "x:3:"},
		{"csv short row 3 of 5, CRLF", withLine(csvLines, 3, "http_reqs,1796028664", "\r\n", true), "x:3:"},
		{"csv truncated last row, no newline", withLine(csvLines, 5, "http_reqs,17960", "\n", false), "x:5:"},
		{"csv truncated last row, CRLF, no newline", withLine(csvLines, 5, "http_reqs,17960", "\r\n", false), "x:5:"},
		// Summary JSON documents.
		{"json lone bad string, newline", "{\"metrics\n", "x:1:"},
		{"json lone bad string, CRLF", "{\"metrics\r\n", "x:1:"},
		{"json lone bad string, no newline", `{"metrics`, "x:1:"},
		{"json bad line 3 of 5", withLine(docLines, 3, `"http_reqs": {"count": 1 "rate": 2}`, "\n", true), "x:3:"},
		{"json bad line 3 of 5, CRLF", withLine(docLines, 3, `"http_reqs": {"count": 1 "rate": 2}`, "\r\n", true), "x:3:"},
		{"json bad character ends line 3", withLine(docLines, 3, `"http_reqs": {"count": 1, "rate": 2}}}]`, "\n", true), "x:3:"},
		{"json wrong type line 3 of 5", withLine(docLines, 3, `"http_reqs": {"count": "many", "rate": 2}`, "\n", true), "x:3:"},
		{"json wrong type line 3 of 5, CRLF", withLine(docLines, 3, `"http_reqs": {"count": "many", "rate": 2}`, "\r\n", true), "x:3:"},
		{"json truncated at line 3, no newline", strings.Join(docLines[:2], "\n") + "\n" + `"http_reqs": {"count": 1,`, "x:3:"},
		{"json truncated at line 3, newline", strings.Join(docLines[:2], "\n") + "\n" + `"http_reqs": {"count": 1,` + "\n", "x:3:"},
		{"json truncated at line 3, CRLF and blank lines", strings.Join(docLines[:2], "\r\n") + "\r\n" + `"http_reqs": {"count": 1,` + "\r\n\r\n", "x:3:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadReader("x", strings.NewReader(c.content), LoadOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), c.line) {
				t.Errorf("error %q, want it to start with %q", err, c.line)
			}
		})
	}
}
