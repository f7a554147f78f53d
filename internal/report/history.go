package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/chart"
	"github.com/envelope-dev/envelope/internal/history"
)

// HistorySeries is one series of a history report: its runs (placed by
// their index in the line), and the envelope band it is judged against.
type HistorySeries struct {
	Key  changepoint.Key
	Runs []changepoint.Run
	// Band is the envelope's band of the figure (min and max across the
	// baseline runs); nil without an envelope or a band for it.
	Band *chart.Band
	// BandFrom is the line index of the first run the band was made
	// from: the band is drawn from that run on (0: across every run, its
	// runs not in the line).
	BandFrom int
}

// HistoryReport is a line of history analysed: the change points,
// outlier runs and drift, and every series' runs.
type HistoryReport struct {
	Changes *history.ChangesReport
	// Labels name the line's runs, Labels[i] the run of index i+1 (its
	// commit, else its test id).
	Labels []string
	Series []HistorySeries
	// Envelope names the envelope the bands come from ("" for none).
	Envelope string
}

// WriteHistoryReport writes the Markdown report of a line of history to
// mdPath, with a light and a dark chart per series in charts/ beside it.
func WriteHistoryReport(r HistoryReport, mdPath string) error {
	if r.Changes == nil || len(r.Labels) == 0 {
		return fmt.Errorf("history report: no runs")
	}
	dir := filepath.Join(filepath.Dir(mdPath), "charts")
	var b strings.Builder
	historySummary(&b, r)
	b.WriteString("\n## Series\n\n")
	for _, s := range r.Series {
		if len(s.Runs) == 0 {
			continue
		}
		name := s.Key.String()
		c := historyChart(r, s)
		paths, err := chart.WriteThemed(c, dir, "history-"+chartFileName(name))
		if err != nil {
			return fmt.Errorf("history report chart %s: %w", name, err)
		}
		fmt.Fprintf(&b, "### `%s` (%s)\n\n", name, s.Key.Figure.Def().Unit)
		notes := b.Len()
		for _, ch := range r.Changes.Changes {
			if ch.Figure == s.Key.Figure && ch.Endpoint == s.Key.Endpoint {
				fmt.Fprintf(&b, "- Change point at run %d (%s): %s, %s → %s (%s), %s.\n", ch.Run.Index, r.Labels[ch.Run.Index-1],
					ch.Direction, envFig(ch.Before), envFig(ch.After), signedPct(ch.Change.Change), ch.StateText())
			}
		}
		for _, o := range r.Changes.Outliers {
			if o.Figure == s.Key.Figure && o.Endpoint == s.Key.Endpoint {
				fmt.Fprintf(&b, "- Outlier run %d (%s): %s against its segment's %s (%s, %.1fσ), not a change.\n", o.Run.Index, r.Labels[o.Run.Index-1],
					envFig(o.Value), envFig(o.SegmentMean), signedPct(o.Change), o.Sigmas)
			}
		}
		if b.Len() > notes {
			b.WriteString("\n")
		}
		b.WriteString(chart.Picture(name+" by commit", paths) + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(mdPath), 0o755); err != nil {
		return err
	}
	return os.WriteFile(mdPath, []byte(b.String()), 0o644)
}

func signedPct(x float64) string { return fmt.Sprintf("%+.1f%%", 100*x) }

// chartFileName keeps a series name safe as a file name.
func chartFileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, name)
}

// historySummary writes the report's head: what was analysed and the
// tables of change points, outlier runs and drift over tolerance.
func historySummary(b *strings.Builder, r HistoryReport) {
	rep := r.Changes
	fmt.Fprintf(b, "# Run history: %s\n\n", rep.Test)
	fmt.Fprintf(b, "%d runs on the main line, from %s to %s, in commit-time order; %d series (each figure, aggregate and per endpoint). ",
		rep.Runs, r.Labels[0], r.Labels[len(r.Labels)-1], len(r.Series))
	b.WriteString("A change point is the first run of a new level, found by E-Divisive means with a t-test and a minimum of 3 runs on each side, at a false discovery rate across the test's hypotheses (an endpoint's latency figures judged together, a percentile only from runs with requests enough to estimate it); an outlier run lies far from the runs on both sides of it and is never a change point.")
	if r.Envelope != "" {
		fmt.Fprintf(b, " The shaded band is envelope %s's band of the figure.", r.Envelope)
	}
	b.WriteString("\n\n## Change points\n\n")
	if len(rep.Changes) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("State: new (no `history changes` reported it yet), reported (reported, not acknowledged), or the status `history ack` gave it.\n\n")
		b.WriteString("| Series | Run | Commit | Direction | Before | After | Change | p | State | Id |\n| :-- | --: | :-- | :-- | --: | --: | --: | --: | :-- | :-- |\n")
		for _, ch := range rep.Changes {
			fmt.Fprintf(b, "| `%s` | %d | %s | %s | %s | %s | %s | %.2g | %s | `%s` |\n", ch.Key, ch.Run.Index, r.Labels[ch.Run.Index-1],
				ch.Direction, envFig(ch.Before), envFig(ch.After), signedPct(ch.Change.Change), ch.P, ch.StateText(), ch.ID)
		}
	}
	if len(rep.Gone) > 0 {
		b.WriteString("\n## Reported, no longer found\n\nChanges reported before that the analysis no longer finds, with why; each keeps its id until acknowledged.\n\n")
		b.WriteString("| Series | Run | Commit | Direction | Before | After | Why | Id |\n| :-- | --: | :-- | :-- | --: | --: | :-- | :-- |\n")
		for _, g := range rep.Gone {
			fmt.Fprintf(b, "| `%s` | %d | %s | %s | %s | %s | %s | `%s` |\n", g.Series, g.Run.Index, g.Run.Commit,
				g.Dir, envFig(g.Before), envFig(g.After), g, g.ID)
		}
	}
	if len(rep.Suspected) > 0 {
		b.WriteString("\n## Suspected steps\n\nSeen by the analysis but not decided at its false discovery rate; drawn dashed on the charts.\n\n")
		b.WriteString("| Series | Run | Commit | Direction | Before | After | Change | p | Decides at | Runs before/after | To decide |\n| :-- | --: | :-- | :-- | --: | --: | --: | --: | --: | --: | :-- |\n")
		for _, sp := range rep.Suspected {
			fmt.Fprintf(b, "| `%s` | %d | %s | %s | %s | %s | %s | %.2g | %.2g | %d/%d | %s |\n", sp.Key, sp.Run.Index, r.Labels[sp.Run.Index-1],
				sp.Direction, envFig(sp.Before), envFig(sp.After), signedPct(sp.Change), sp.P, sp.Decide, sp.RunsBefore, sp.RunsAfter, history.MoreRuns(sp))
		}
	}
	if len(rep.NotAnalysed) > 0 {
		b.WriteString("\n## Not analysed\n\nPercentiles whose runs had too few requests to estimate them.\n\n| Series | Runs left out | Most requests | Requests needed |\n| :-- | --: | --: | --: |\n")
		for _, na := range rep.NotAnalysed {
			fmt.Fprintf(b, "| `%s` | %d of %d | %d | %d |\n", na.Key, na.Runs, na.Runs+na.Analysed, na.MostRequests, na.RequestsNeeded)
		}
	}
	b.WriteString("\n## Outlier runs\n\n")
	if len(rep.Outliers) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("| Run | Commit | Series | Value | Segment level | Change | σ |\n| --: | :-- | :-- | --: | --: | --: | --: |\n")
		for _, o := range rep.Outliers {
			fmt.Fprintf(b, "| %d | %s | `%s` | %s | %s | %s | %.1f |\n", o.Run.Index, r.Labels[o.Run.Index-1], o.Key,
				envFig(o.Value), envFig(o.SegmentMean), signedPct(o.Change), o.Sigmas)
		}
	}
	b.WriteString("\n## Drift\n\n")
	over := 0
	for _, d := range rep.Drift {
		if d.OverTolerance {
			if over == 0 {
				b.WriteString("| Series | Since run | Runs | Drift | Interval |\n| :-- | --: | --: | --: | :-- |\n")
			}
			over++
			fmt.Fprintf(b, "| `%s` | %d | %d | %s | %s to %s |\n", d.Key, d.Since.Index, d.Runs, signedPct(d.Change), signedPct(d.CI[0]), signedPct(d.CI[1]))
		}
	}
	if over == 0 {
		fmt.Fprintf(b, "No series drifted past its tolerance since the start of its last level (%d series with enough runs).\n", len(rep.Drift))
	}
}

// historyChart draws one series by commit: its values, the level of
// each segment between change points, the change points, the outlier
// runs and the envelope's band.
func historyChart(r HistoryReport, s HistorySeries) chart.Chart {
	n := len(s.Runs)
	cats := make([]string, n)
	vals := make([]float64, n)
	pos := map[int]int{} // line index → place in the series
	step := max(1, (n+14)/15)
	for i, run := range s.Runs {
		pos[run.Index] = i
		vals[i] = run.Value
		if i%step == 0 {
			cats[i] = r.Labels[run.Index-1]
		}
	}
	var changes, outliers chart.Points
	changes.Name, changes.Shape = "change point", "triangle"
	outliers.Name, outliers.Shape = "outlier run", "cross"
	var cps []history.ReportedChange
	for _, ch := range r.Changes.Changes {
		if ch.Figure == s.Key.Figure && ch.Endpoint == s.Key.Endpoint {
			if i, ok := pos[ch.Run.Index]; ok {
				cps = append(cps, ch)
				changes.At, changes.Values = append(changes.At, i), append(changes.Values, vals[i])
			}
		}
	}
	for _, o := range r.Changes.Outliers {
		if o.Figure == s.Key.Figure && o.Endpoint == s.Key.Endpoint {
			if i, ok := pos[o.Run.Index]; ok {
				outliers.At, outliers.Values = append(outliers.At, i), append(outliers.Values, vals[i])
			}
		}
	}
	var sps []changepoint.Suspect
	suspected := chart.Points{Name: "suspected step"}
	for _, sp := range r.Changes.Suspected {
		if sp.Figure == s.Key.Figure && sp.Endpoint == s.Key.Endpoint {
			if i, ok := pos[sp.Run.Index]; ok {
				sps = append(sps, sp)
				suspected.At, suspected.Values = append(suspected.At, i), append(suspected.Values, vals[i])
			}
		}
	}
	level, split := segmentLevels(s.Runs, cps, outliers.At, sps)
	c := chart.Chart{
		Title:      fmt.Sprintf("%s by commit", s.Key.String()),
		YLabel:     s.Key.Figure.Def().Unit,
		Categories: cats,
		Lines:      []chart.Series{{Name: "run value", Values: vals}, {Name: "segment level", Values: level}},
		Points:     []chart.Points{changes, outliers},
	}
	if len(sps) > 0 {
		c.Lines = append(c.Lines, chart.Series{Name: "suspected levels (not decided)", Values: split, Dashed: true})
		c.Points = append(c.Points, suspected)
	}
	for _, d := range r.Changes.Drift {
		if d.Figure != s.Key.Figure || d.Endpoint != s.Key.Endpoint || !d.OverTolerance {
			continue
		}
		line := make([]float64, n)
		for i, run := range s.Runs {
			line[i] = math.NaN()
			if run.Index >= d.Since.Index {
				line[i] = d.Level * math.Pow(1+d.PerRun, float64(run.Index-d.Since.Index))
			}
		}
		c.Lines = append(c.Lines, chart.Series{Name: fmt.Sprintf("drift %s", signedPct(d.Change)), Values: line, Dashed: true})
	}
	if s.Band != nil {
		b := *s.Band
		b.From = 0
		if s.BandFrom > 0 {
			// From the series' first run at or after the band's first.
			b.From = n - 1
			for i, run := range s.Runs {
				if run.Index >= s.BandFrom {
					b.From = i
					break
				}
			}
		}
		c.Bands = []chart.Band{b}
	}
	return c
}

// segmentLevels is each run's segment level: the level before the first
// change point after it, else after the last one; without change points
// the mean of the series' runs, outlier runs left out. A segment with a
// suspected step in it has no decided level (NaN in level): split gives
// its levels before and after the step, the suspect's, and NaN
// elsewhere.
func segmentLevels(runs []changepoint.Run, cps []history.ReportedChange, outliers []int, sps []changepoint.Suspect) (level, split []float64) {
	slices.SortFunc(cps, func(a, b history.ReportedChange) int { return a.Run.Index - b.Run.Index })
	level, split = make([]float64, len(runs)), make([]float64, len(runs))
	if len(cps) == 0 {
		var sum float64
		k := 0
		for i, r := range runs {
			if !slices.Contains(outliers, i) {
				sum += r.Value
				k++
			}
		}
		for i := range level {
			level[i] = sum / math.Max(1, float64(k))
		}
	} else {
		for i, r := range runs {
			level[i] = cps[len(cps)-1].After
			for _, ch := range cps {
				if r.Index < ch.Run.Index {
					level[i] = ch.Before
					break
				}
			}
		}
	}
	// The segment of run index x: the decided change points around it.
	bounds := func(x int) (lo, hi int) {
		lo, hi = 0, math.MaxInt
		for _, ch := range cps {
			if ch.Run.Index <= x {
				lo = ch.Run.Index
			} else {
				hi = min(hi, ch.Run.Index)
			}
		}
		return lo, hi
	}
	for i := range split {
		split[i] = math.NaN()
	}
	for _, sp := range sps {
		lo, hi := bounds(sp.Run.Index)
		for i, r := range runs {
			if r.Index < lo || r.Index >= hi {
				continue
			}
			level[i] = math.NaN()
			split[i] = sp.Before
			if r.Index >= sp.Run.Index {
				split[i] = sp.After
			}
		}
	}
	return level, split
}
