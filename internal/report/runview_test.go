package report

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// runViewCase is a real comparison: the envelope of the three baseline
// summaries, and the point stream of the run with slower auth and the
// odd 503, judged against it.
type runViewCase struct {
	env  *envelope.Envelope
	run  figures.Run
	res  *compare.Result
	base []figures.Run
}

var (
	runViewOnce sync.Once
	runViewData runViewCase
	runViewErr  error
)

func runViewFixture(t *testing.T) runViewCase {
	t.Helper()
	runViewOnce.Do(func() {
		var c runViewCase
		c.base, runViewErr = figures.ReadFiles(fixtures.Glob(t, "k6/baseline-mix-v2.2.0/baseline-?.summary.json"), figures.LoadOptions(0, ""))
		if runViewErr != nil {
			return
		}
		if c.env, runViewErr = envelope.Compute(c.base, envelope.Options{Name: "baseline-mix"}); runViewErr != nil {
			return
		}
		var cand []figures.Run
		cand, runViewErr = figures.ReadFiles([]string{fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz")}, figures.LoadOptions(0, ""))
		if runViewErr != nil {
			return
		}
		c.run = cand[0]
		c.res, runViewErr = compare.Compare(c.env, cand, compare.Options{})
		runViewData = c
	})
	if runViewErr != nil {
		t.Fatal(runViewErr)
	}
	return runViewData
}

// The charts draw each bin's figures at its place: the request rate is
// the bin's requests over its width beside the run's rate, the
// percentiles are the bin's, a failure point is the bin's failure rate;
// the bands are the envelope's; the X labels name the bins' starts,
// sparsely; and each title carries its figures' verdicts.
func TestRunViewChartsDrawTheBins(t *testing.T) {
	c := runViewFixture(t)
	bins := c.run.Timeline.Bins
	cs := runViewCharts(c.run, c.env, c.res)
	n := len(bins)
	if cs.Failures == nil || len(cs.Failures.Points) != 1 {
		t.Fatalf("a run with %d failures has no failures chart", c.run.Failed)
	}
	for _, ch := range cs.list() {
		if len(ch.Categories) != n {
			t.Fatalf("%q: %d categories for %d bins", ch.Title, len(ch.Categories), n)
		}
		if err := ch.Validate(); err != nil {
			t.Error(err)
		}
	}
	labels := 0
	for i, b := range bins {
		if cs.Rate.Lines[0].Values[i] != float64(b.Requests)/b.Width.Seconds() || cs.Rate.Lines[1].Values[i] != c.run.RPS {
			t.Errorf("bin %d: rate drawn at %v (run %v), the bin has %d requests over %v", i, cs.Rate.Lines[0].Values[i], cs.Rate.Lines[1].Values[i], b.Requests, b.Width)
		}
		for j, want := range []float64{b.P50, b.P95, b.P99} {
			if got := cs.Latency.Lines[j].Values[i]; got != want {
				t.Errorf("bin %d: %s drawn at %v, the bin's is %v", i, cs.Latency.Lines[j].Name, got, want)
			}
		}
		p := cs.Failures.Points[0]
		if want := 100 * float64(b.Failed) / float64(b.Judged); p.At[i] != i || math.Abs(p.Values[i]-want) > 1e-12 {
			t.Errorf("bin %d: failures drawn at %d, %v%%; the bin has %d of %d", i, p.At[i], p.Values[i], b.Failed, b.Judged)
		}
		if l := cs.Rate.Categories[i]; l != "" {
			labels++
			if want := clock(b.Offset); l != want {
				t.Errorf("bin %d at %v labelled %q", i, b.Offset, l)
			}
		}
	}
	if cs.Rate.Categories[0] != "0:00" || labels < 4 || labels > runViewLabels+1 {
		t.Errorf("%d labels, the first %q: %q", labels, cs.Rate.Categories[0], cs.Rate.Categories)
	}
	bandsAre := func(what string, got []chart.Band, want ...envelope.Band) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d bands, want %d", what, len(got), len(want))
		}
		for i, w := range want {
			if got[i].Low != w.Min || got[i].High != w.Max || got[i].From != 0 {
				t.Errorf("%s band %d: %v–%v from %d, the envelope's %v–%v", what, i, got[i].Low, got[i].High, got[i].From, w.Min, w.Max)
			}
		}
	}
	tp := c.env.Throughput
	bandsAre("rate", cs.Rate.Bands, envelope.Band{Min: tp.Min, Max: tp.Max})
	l := c.env.Latency
	bandsAre("latency", cs.Latency.Bands, l.Median, l.P95, l.P99)
	// p50 of a few ms and p99 of a second: a linear axis would flatten the median.
	if !cs.Latency.LogY {
		t.Errorf("latency from %v to %v ms on a linear axis", c.run.Median, c.run.P99)
	}
	verdict := map[figures.Name]compare.Verdict{}
	for _, f := range c.res.Figures {
		if f.Endpoint == "" {
			verdict[f.Name] = f.Verdict
		}
	}
	for _, tc := range []struct {
		title string
		names []figures.Name
	}{{cs.Rate.Title, []figures.Name{figures.RPS}}, {cs.Latency.Title, []figures.Name{figures.Median, figures.P95, figures.P99}}, {cs.Failures.Title, []figures.Name{figures.ErrorRate}}} {
		for _, n := range tc.names {
			if want := n.Def().Label + ": " + string(verdict[n]); verdict[n] == "" || !strings.Contains(tc.title, want) {
				t.Errorf("title %q lacks %q", tc.title, want)
			}
		}
	}
	// Without a failure: no failures chart.
	clean := c.run
	clean.Failed = 0
	if runViewCharts(clean, c.env, c.res).Failures != nil {
		t.Error("a failures chart of a run without failures")
	}
	// Without an envelope: no bands; without a result: no verdicts.
	bare := runViewCharts(c.run, nil, nil)
	if len(bare.Rate.Bands)+len(bare.Latency.Bands) != 0 || strings.Contains(bare.Latency.Title, "Regression") {
		t.Errorf("bands %v %v or verdicts %q without an envelope or result", bare.Rate.Bands, bare.Latency.Bands, bare.Latency.Title)
	}
}

var dataURI = regexp.MustCompile(`srcset="data:image/png;base64,([A-Za-z0-9+/=]+)"`)

// The section names the run, shows its three charts as pictures that
// decode, says its failures and checks as the run counted them, and
// holds each judged figure's verdict in the figure's row.
func TestRunOverTimeSection(t *testing.T) {
	c := runViewFixture(t)
	s, err := RunOverTime(c.run, c.env, c.res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s, "## Run over time: "+mdText(c.run.Source)+"\n") {
		t.Errorf("heading: %q", s[:min(len(s), 80)])
	}
	uris := dataURI.FindAllStringSubmatch(s, -1)
	if len(uris) != 6 || strings.Count(s, "<picture>") != 3 {
		t.Errorf("%d themed images in %d pictures, want 6 in 3", len(uris), strings.Count(s, "<picture>"))
	}
	for _, u := range uris {
		raw, err := base64.StdEncoding.DecodeString(u[1])
		if err != nil {
			t.Fatal(err)
		}
		if img, err := png.Decode(bytes.NewReader(raw)); err != nil || img.Bounds().Dx() == 0 {
			t.Errorf("picture: %v", err)
		}
	}
	if want := figures.Thousands(c.run.Failed) + " of " + figures.Thousands(c.run.Checked) + " requests failed"; c.run.Failed == 0 || !strings.Contains(s, want) {
		t.Errorf("section lacks %q", want)
	}
	if len(c.run.Checks) == 0 {
		t.Fatal("the run has no checks")
	}
	for _, ch := range c.run.Checks {
		if row := "| " + mdCell(ch.Name) + " | " + figures.Thousands(ch.Passes) + " | " + figures.Thousands(ch.Fails) + " | "; !strings.Contains(s, row) {
			t.Errorf("section lacks the check row %q", row)
		}
	}
	rows := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if cells := strings.Split(line, " | "); len(cells) > 2 {
			rows[strings.TrimPrefix(cells[0], "| ")] = line
		}
	}
	regressions := 0
	for _, f := range c.res.Figures {
		row, ok := rows[mdCell(f.Label())]
		if !ok || !strings.HasSuffix(row, " | "+string(f.Verdict)+" |") {
			t.Errorf("%s (%s): row %q", f.Label(), f.Verdict, row)
		}
		if f.Verdict == compare.Regression {
			regressions++
		}
	}
	if regressions == 0 {
		t.Error("the regressed run judged without a Regression")
	}
	// Without a result: no verdicts; a run not compared is an error.
	s, err = RunOverTime(c.run, c.env, nil)
	if err != nil || strings.Contains(s, "### Verdicts") || strings.Contains(s, string(compare.Regression)) {
		t.Errorf("verdicts without a result (%v)", err)
	}
	if _, err := RunOverTime(c.base[0], c.env, c.res); err == nil || !strings.Contains(err.Error(), c.base[0].Source) {
		t.Errorf("a run that was not compared: %v", err)
	}
}

// A run read from a summary has no timeline: the section says so and
// what would show it, draws nothing, and still lists its checks.
func TestRunOverTimeSummary(t *testing.T) {
	c := runViewFixture(t)
	run := c.base[0]
	s, err := RunOverTime(run, c.env, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, NoTimelineSentence) || strings.Contains(s, "<picture>") {
		t.Errorf("summary run section:\n%s", s)
	}
	if !strings.Contains(s, "--out json") || len(run.Checks) == 0 || !strings.Contains(s, "| "+mdCell(run.Checks[0].Name)+" | "+figures.Thousands(run.Checks[0].Passes)+" |") {
		t.Errorf("summary run section lacks the point stream's name or its checks:\n%s", s)
	}
	if !strings.Contains(s, figures.Thousands(run.Requests)+" requests") {
		t.Errorf("summary run section lacks its requests:\n%s", s)
	}
}

// The rate and latency charts draw each bin's value at its place: the
// pixel where a bin's rate (or p50, p95, p99) falls has its line's
// colour, in both themes, and the envelope's throughput band is filled
// between its edges. A value drawn off by more than a marker's radius
// fails.
func TestRunViewChartsDrawInPlace(t *testing.T) {
	c := runViewFixture(t)
	cs := runViewCharts(c.run, c.env, c.res)
	for _, ch := range []*chart.Chart{&cs.Rate.Chart, &cs.Latency.Chart} {
		for _, th := range chart.Themes() {
			img, l, err := ch.Draw(th)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Check(); err != nil {
				t.Errorf("%s %s: %v", ch.Title, th.Name, err)
			}
			for j, s := range ch.Lines {
				if s.Dashed {
					continue // a level, not the bins'
				}
				for i, v := range s.Values {
					if math.IsNaN(v) || nearOtherLine(ch, j, i, v) {
						continue
					}
					if err := l.CheckColour(img, float64(i), v, th.Palette[j%len(th.Palette)]); err != nil {
						t.Errorf("%s %s: %s of bin %d: %v", ch.Title, th.Name, s.Name, i, err)
					}
				}
			}
		}
	}
	tp := cs.Rate.Bands[0]
	img, l, err := cs.Rate.Draw(chart.Light)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Low != c.env.Throughput.Min || tp.High != c.env.Throughput.Max {
		t.Fatalf("throughput band %v–%v, the envelope's is %v–%v", tp.Low, tp.High, c.env.Throughput.Min, c.env.Throughput.Max)
	}
	if err := l.CheckBand(img, -0.45, tp.Low, tp.High, cs.Rate.BandFill(chart.Light, 0), chart.Light.Background); err != nil {
		t.Error(err)
	}
}

// nearOtherLine reports whether another of ch's lines passes within a
// few percent of v at category i, where its marker may cover v's.
func nearOtherLine(ch *chart.Chart, j, i int, v float64) bool {
	for k, s := range ch.Lines {
		if k != j && math.Abs(s.Values[i]-v) < 0.03*math.Abs(v) {
			return true
		}
	}
	return false
}
