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

// Numbers outside JSON's grammar are refused on the canonical fast path
// and in the general scanner (keys out of k6's order) alike.
func TestNonJSONNumbersRefused(t *testing.T) {
	for _, v := range []string{"01", "-01", "+1", "00", ".5", "1.", "1e", "-"} {
		for _, line := range []string{
			`{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":` + v + `,"tags":{"status":"200"}}}`,
			`{"type":"Point","metric":"http_reqs","data":{"value":` + v + `,"time":"2026-11-30T08:51:04Z","tags":{}}}`,
		} {
			var p Point
			_, _, err := ParseNDJSONLine([]byte(line), &p)
			if err == nil || !strings.Contains(err.Error(), "data.value") {
				t.Errorf("value %s: error %v, want one naming data.value", v, err)
			}
		}
	}
	var p Point
	if _, _, err := ParseNDJSONLine([]byte(`{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":0,"tags":{}}}`), &p); err != nil || p.Value != 0 {
		t.Errorf("value 0: %v, %v", p.Value, err)
	}
}
