package k6

import (
	"strings"
	"testing"
)

// An error about a non-numeric value quotes that value alone, not the
// bytes after it.
func TestBadValueErrorQuotesToken(t *testing.T) {
	const head = `{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":`
	const tail = `,"tags":{"status":"200"}}}`
	for _, tc := range []struct{ value, want string }{
		{`NaN`, `got "NaN"`},
		{`Infinity`, `got "Infinity"`},
		{`"12.5"`, `got "\"12.5\""`},
	} {
		var p Point
		_, _, err := ParseNDJSONLine([]byte(head+tc.value+tail), &p)
		if err == nil {
			t.Fatalf("%s: no error", tc.value)
		}
		if !strings.Contains(err.Error(), "data.value") || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want field data.value and suffix %s", tc.value, err, tc.want)
		}
	}
}
