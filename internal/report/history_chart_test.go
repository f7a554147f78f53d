package report

import (
	"math"
	"testing"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/history"
)

// historyCase is a line of 30 runs whose median steps ×1.2 at run 11
// (decided), steps ×1.1 at run 21 (suspected, not decided), and whose
// p95 drifts over tolerance from run 1.
func historyCase() HistoryReport {
	med := changepoint.Key{Test: "t", Figure: "median", Endpoint: "auth_login"}
	p95 := changepoint.Key{Test: "t", Figure: "p95", Endpoint: "auth_login"}
	var labels []string
	var mr, pr []changepoint.Run
	for i := 1; i <= 30; i++ {
		c := "c" + string(rune('A'+i/26)) + string(rune('a'+i%26))
		labels = append(labels, c)
		v := 100 * (1 + 0.03*math.Sin(float64(i)))
		if i >= 11 {
			v *= 1.2
		}
		if i >= 21 {
			v *= 1.1
		}
		mr = append(mr, changepoint.Run{Index: i, Commit: c, Value: v})
		pr = append(pr, changepoint.Run{Index: i, Commit: c, Value: 300 * math.Pow(1.01, float64(i-1)) * (1 + 0.02*math.Cos(float64(i)))})
	}
	rep := &history.ChangesReport{Test: "t", Runs: 30,
		Changes: []history.ReportedChange{{Change: changepoint.Change{Key: med, Run: changepoint.RunRef{Index: 11, Commit: labels[10]},
			Direction: changepoint.Regression, Before: 100, After: 120, Change: 0.2}, Status: history.StatusNew}},
		Suspected: []changepoint.Suspect{{Key: med, Run: changepoint.RunRef{Index: 21, Commit: labels[20]}, Direction: changepoint.Regression,
			Before: 120, After: 132, Change: 0.1, P: 0.001, Decide: 1e-5, RunsBefore: 10, RunsAfter: 10, MoreRuns: 6, MoreRunsOf: []string{labels[19], labels[29]}}},
		Drift: []changepoint.Drift{{Key: p95, Since: changepoint.RunRef{Index: 1}, Runs: 30, PerRun: 0.01, Change: 0.334, Level: 300, OverTolerance: true}},
	}
	return HistoryReport{Changes: rep, Labels: labels, Series: []HistorySeries{{Key: med, Runs: mr}, {Key: p95, Runs: pr}}}
}

// The chart draws what the analysis found: the decided level as a
// solid segment line, a suspected step as dashed levels on each side of
// it (no flat segment across it) with a marker, and a drift over
// tolerance as a dashed line from its run.
func TestHistoryChartSuspectAndDrift(t *testing.T) {
	r := historyCase()
	c := historyChart(r, r.Series[0])
	var level, split *chart.Series
	for i := range c.Lines {
		switch c.Lines[i].Name {
		case "segment level":
			level = &c.Lines[i]
		case "suspected levels (not decided)":
			split = &c.Lines[i]
		}
	}
	if level == nil || split == nil || !split.Dashed {
		t.Fatalf("lines %+v", c.Lines)
	}
	for i, v := range level.Values {
		idx := i + 1
		switch {
		case idx < 11 && v != 100, idx >= 11 && !math.IsNaN(v):
			t.Errorf("run %d: segment level %v", idx, v)
		case idx < 11 && !math.IsNaN(split.Values[i]), idx >= 11 && idx < 21 && split.Values[i] != 120, idx >= 21 && split.Values[i] != 132:
			t.Errorf("run %d: suspected level %v", idx, split.Values[i])
		}
	}
	marked := false
	for _, p := range c.Points {
		marked = marked || p.Name == "suspected step" && len(p.At) == 1 && p.At[0] == 20
	}
	if !marked {
		t.Errorf("points %+v", c.Points)
	}
	d := historyChart(r, r.Series[1])
	var drift *chart.Series
	for i := range d.Lines {
		if d.Lines[i].Dashed {
			drift = &d.Lines[i]
		}
	}
	if drift == nil || drift.Name != "drift +33.4%" || drift.Values[0] != 300 || math.Abs(drift.Values[29]-300*math.Pow(1.01, 29)) > 1e-9 {
		t.Fatalf("drift line %+v", drift)
	}
	dir := t.TempDir()
	if err := WriteHistoryReport(r, dir+"/history.md"); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryChartBandFrom: the envelope's band is drawn from the
// series' first run at or after the envelope's first run in the line,
// not across the commits before it; a series without that run starts
// at its next one; without a first run the band spans every run.
func TestHistoryChartBandFrom(t *testing.T) {
	r := historyCase()
	s := r.Series[0]
	s.Band = &chart.Band{Name: "envelope", Low: 110, High: 130}
	for _, c := range []struct {
		from, want int
		drop       int // a run of the series left out (0: none)
	}{
		{0, 0, 0},
		{1, 0, 0},
		{21, 20, 0},
		{21, 20, 21}, // run 21 missing: from run 22, the 21st of the series
		{30, 29, 0},
	} {
		s := s
		s.BandFrom = c.from
		if c.drop > 0 {
			s.Runs = append(append([]changepoint.Run{}, s.Runs[:c.drop-1]...), s.Runs[c.drop:]...)
		}
		ch := historyChart(r, s)
		if len(ch.Bands) != 1 || ch.Bands[0].From != c.want {
			t.Errorf("band from run %d (run %d left out): %+v, want from category %d", c.from, c.drop, ch.Bands, c.want)
			continue
		}
		if got := s.Runs[ch.Bands[0].From].Index; c.from > 0 && (got < c.from || ch.Bands[0].From > 0 && s.Runs[ch.Bands[0].From-1].Index >= c.from) {
			t.Errorf("band from run %d starts at run %d", c.from, got)
		}
	}
}
