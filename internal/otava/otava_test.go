package otava

import (
	"strings"
	"testing"
	"time"
)

// An Otava-style CSV's errors name the file, the line and the field.
func TestReadCSVErrors(t *testing.T) {
	for _, tc := range []struct{ csv, want string }{
		{"time,commit,p95\n2026-01-01,a1,700\n2026-01-02,a2,fast\n", `o.csv: line 3, field p95: "fast" is not a finite number`},
		{"time,commit,p95\nyesterday,a1,700\n", `o.csv: line 2, field time: "yesterday" is not a time`},
		{"time,commit,auth_login.rps\n", `o.csv: line 1, column 3: figure "auth_login.rps": an endpoint has only`},
		{"time,p95\n2026-01-01,700\n", "o.csv: line 1: no commit column"},
		{"time,commit,p95\n2026-01-01,,700\n", "o.csv: line 2, field commit: empty"},
		{"time,commit,p95\n", "o.csv: no runs after the header"},
	} {
		_, err := ReadCSV("o.csv", strings.NewReader(tc.csv), "t")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.csv, err, tc.want)
		}
	}
	recs, err := ReadCSV("o.csv", strings.NewReader("time,commit,p95,auth_login.p95\n2026-01-01 10:00:00 +0200,a1,700,\n"), "t")
	if err != nil || len(recs) != 1 || len(recs[0].Figures) != 1 || recs[0].Figures[0].Key.String() != "p95" ||
		!recs[0].CommitTime.Equal(time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)) || recs[0].SourceFile != "o.csv:2" {
		t.Errorf("%+v %v", recs, err)
	}
}
