package history

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// TestSeriesJSONAsEncodingJSON: show's hand-written JSON is exactly what
// encoding/json writes for SeriesJSON.
func TestSeriesJSONAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v := SeriesView{Test: `mix "<a&b>"`, Endpoint: "name=GET /x", Figure: figures.P95, Branch: "feat/ü", Points: []runstore.Point{
		{Index: 1, Run: runstore.Run{ID: 7, TestID: "r1", Commit: "c1", CommitTime: at}, Value: 929.421, Count: 319, CI: &figures.Interval{Low: 808.144, High: 1253.2}},
		{Index: 2, Run: runstore.Run{ID: 8, Excluded: true, Reason: "noisy\nneighbour"}, Value: 1e-7},
		{Index: 3, Run: runstore.Run{ID: 9, RunTime: at}, Value: 3e21, Count: 1},
		{Index: 4, Run: runstore.Run{ID: 10}, Value: 0.000123},
	}}
	var got strings.Builder
	if err := v.Write(&got, "json"); err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(v.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want)+"\n" {
		t.Errorf("got  %s\nwant %s", got.String(), want)
	}
}
