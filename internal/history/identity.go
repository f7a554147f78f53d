package history

import (
	"cmp"
	"fmt"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// State is what a person is told of a change: new (no `history changes`
// reported it yet), reported (reported, nobody has said what it is), or
// the status someone gave it.
type State string

// StateReported is the state of a change reported and not acknowledged;
// a new change's state is StatusNew's word, an acknowledged one's its
// status.
const StateReported State = "reported"

// state is a change's State from whether it was ever reported and its
// stored status.
func state(reported bool, s Status) State {
	switch {
	case !reported:
		return State(StatusNew)
	case s == StatusNew:
		return StateReported
	}
	return State(s)
}

// GoneReason says why a change reported before is no longer found.
type GoneReason string

// The reasons a reported change is no longer found.
const (
	// GoneMerged: the step found now near it is another reported
	// change's, nearer to it.
	GoneMerged GoneReason = "merged"
	// GoneBelowLimit: a step is still seen there, but not decided at the
	// false discovery rate (a suspected step, or only in other figures of
	// the endpoint's latency family).
	GoneBelowLimit GoneReason = "below the limit"
	// GoneFewRuns: its run is among the line's last, with fewer runs
	// from it on than a change needs (runs were excluded after it).
	GoneFewRuns GoneReason = "too few runs after it"
	// GoneResolved: no step of its direction is seen near it any more,
	// decided or suspected.
	GoneResolved GoneReason = "resolved"
	// GoneLeftLine: its run is no longer in the analysed line (excluded,
	// or recorded on another branch).
	GoneLeftLine GoneReason = "left the line"
)

// GoneChange is a change the analysis found before and finds no more,
// with why: it keeps its id, so it is the same change if it returns.
type GoneChange struct {
	ID     string                `json:"id"`
	Key    changepoint.Key       `json:"-"`
	Series string                `json:"series"`
	Run    changepoint.RunRef    `json:"run"`
	Dir    changepoint.Direction `json:"direction"`
	Before float64               `json:"before"`
	After  float64               `json:"after"`
	State  State                 `json:"state"`
	Reason GoneReason            `json:"reason"`
	// Detail says what is seen now: the change it merged into, the
	// suspected step's p-value and the one that would decide it.
	Detail string `json:"detail,omitempty"`
}

// String is the reason with its detail, as people read it.
func (g GoneChange) String() string {
	if g.Detail == "" {
		return string(g.Reason)
	}
	return string(g.Reason) + ": " + g.Detail
}

// near is the distance within which two detections of one series and
// direction are one change: a change's run moves by up to the minimum
// segment while the runs after it are few.
func (an *Analysis) near() int { return an.Analyzer.Config().MinRuns }

// storedAt is a stored change's run index in the line as it is now: its
// commit's run, else the index it was reported at; 0 when its commit is
// no longer in the line.
func (an *Analysis) storedAt(m runstore.StoredChange) int {
	if m.Commit == "" {
		return m.RunIndex
	}
	return an.IndexOf(m.Commit)
}

// gone lists the reported changes not acknowledged that no found change
// is (matched: the found change's id by the stored id it is), each with
// why it is no longer found.
func (an *Analysis) gone(stored []runstore.StoredChange, matched map[string]string) []GoneChange {
	shown := map[string]string{}
	for sid, cid := range matched {
		shown[cid] = sid
	}
	out := []GoneChange{}
	for _, m := range stored {
		if _, ok := matched[m.ID]; ok || Status(m.Status) != StatusNew {
			continue
		}
		k := changepoint.Key{Test: an.Test, Figure: m.Figure, Endpoint: m.Endpoint}
		g := GoneChange{ID: m.ID, Key: k, Series: storedSeries(m), Dir: changepoint.Direction(m.Direction),
			Before: m.Before, After: m.After, State: StateReported}
		at := an.storedAt(m)
		if at == 0 {
			g.Run = changepoint.RunRef{Index: m.RunIndex, TestID: m.TestID, Commit: m.Commit}
			g.Reason, g.Detail = GoneLeftLine, fmt.Sprintf("no run of commit %s in the line", m.Commit)
			out = append(out, g)
			continue
		}
		g.Run = an.Ref(at)
		g.Reason, g.Detail = an.whyGone(k, g.Dir, at, shown)
		out = append(out, g)
	}
	return out
}

// whyGone says why no change of series k and direction dir is found
// near run at any more (shown: the id each found change is shown by,
// by its own id).
func (an *Analysis) whyGone(k changepoint.Key, dir changepoint.Direction, at int, shown map[string]string) (GoneReason, string) {
	for _, c := range an.Result.Changes {
		if c.Figure == k.Figure && c.Endpoint == k.Endpoint && c.Direction == dir && abs(c.Run.Index-at) <= an.near() {
			return GoneMerged, fmt.Sprintf("into %s at run %d", cmp.Or(shown[c.ID], c.ID), c.Run.Index)
		}
	}
	for _, sp := range an.Result.Suspected {
		if sameFamily(sp.Key, k) && sp.Direction == dir && abs(sp.Run.Index-at) <= an.near() {
			return GoneBelowLimit, fmt.Sprintf("suspected at run %d, p %.2g over the %.2g that decides", sp.Run.Index, sp.P, sp.Decide)
		}
	}
	for _, c := range an.Result.Changes {
		if sameFamily(c.Key, k) && c.Direction == dir && abs(c.Run.Index-at) <= an.near() {
			return GoneBelowLimit, fmt.Sprintf("the endpoint's step at run %d shows in %s, not in this figure", c.Run.Index, c.Figure)
		}
	}
	if after := len(an.Runs) - at + 1; after < an.near() {
		return GoneFewRuns, fmt.Sprintf("%d from run %d on, a change needs %d", after, at, an.near())
	}
	return GoneResolved, fmt.Sprintf("no %s step decided or suspected near run %d now", dir, at)
}

// sameFamily says whether two series are one hypothesis: the same
// series, or latency figures of one endpoint (or of the aggregate),
// judged as one.
func sameFamily(a, b changepoint.Key) bool {
	return a.Endpoint == b.Endpoint && (a.Figure == b.Figure || a.Figure.Def().Latency && b.Figure.Def().Latency)
}
