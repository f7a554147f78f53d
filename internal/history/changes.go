package history

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/envelope-dev/envelope/internal/changepoint"
	"github.com/envelope-dev/envelope/internal/runstore"
)

// Status is a change point's place in its lifecycle.
type Status string

// The statuses: a change is new until someone says what it is.
const (
	StatusNew           Status = "new"
	StatusAcknowledged  Status = "acknowledged"
	StatusExpected      Status = "expected"
	StatusFalsePositive Status = "false_positive"
	StatusFixed         Status = "fixed"
)

// AckStatuses are the statuses `history ack` sets; a fresh slice each
// call.
func AckStatuses() []string {
	return []string{string(StatusAcknowledged), string(StatusExpected), string(StatusFalsePositive), string(StatusFixed)}
}

// Accepted says the status makes the change the line's new level: an
// acknowledged or expected change is one a re-baseline starts after.
func (s Status) Accepted() bool { return s == StatusAcknowledged || s == StatusExpected }

// ParseStatus reads a status `history ack` may set.
func ParseStatus(v string) (Status, error) {
	if !slices.Contains(AckStatuses(), v) {
		return "", fmt.Errorf("status %q: want one of %s", v, strings.Join(AckStatuses(), ", "))
	}
	return Status(v), nil
}

// ReportedChange is a change point with its stored lifecycle.
type ReportedChange struct {
	changepoint.Change
	Status Status `json:"status"`
	// State is what a person is told: new, reported, or its status.
	State State  `json:"state"`
	Note  string `json:"note,omitempty"`
	// FirstReported is when `history changes` first reported it; empty
	// for a change reported by none yet.
	FirstReported string `json:"first_reported,omitempty"`
	// New: no earlier call reported it (this one did, or, for a preview,
	// will).
	New bool `json:"new"`
}

// ChangesReport is what `history changes` writes: the JSON contract
// other tools read.
type ChangesReport struct {
	Test     string                `json:"test"`
	Runs     int                   `json:"runs"`
	Since    *changepoint.RunRef   `json:"since,omitempty"`
	Changes  []ReportedChange      `json:"changes"`
	Outliers []changepoint.Outlier `json:"outliers"`
	Drift    []changepoint.Drift   `json:"drift"`
	// Suspected are the steps seen but not decided, with the runs that
	// would decide them; NotAnalysed the percentile series with runs too
	// small to estimate them.
	Suspected   []changepoint.Suspect     `json:"suspected"`
	NotAnalysed []changepoint.NotAnalysed `json:"not_analysed"`
	// Gone are the reported changes nobody acknowledged that the
	// analysis no longer finds, each with why.
	Gone []GoneChange `json:"gone"`

	// unreported are the changes no stored change is, as the store
	// marks them reported; unreportedAt, their places in Changes.
	unreported   []runstore.StoredChange
	unreportedAt []int
}

// NewRegressions counts the new regression change points.
func (r *ChangesReport) NewRegressions() int {
	n := 0
	for _, c := range r.Changes {
		if c.New && c.Direction == changepoint.Regression {
			n++
		}
	}
	return n
}

// Unreported are the report's changes no stored change is, as the store
// marks them reported (runstore's MarkReported); none once Reported.
func (r *ChangesReport) Unreported() []runstore.StoredChange { return r.unreported }

// Reported takes what marking Unreported as reported said, at when:
// first[i] says whether that call stored the i'th change first. A change
// another call stored first, even at the same moment, is not new.
func (r *ChangesReport) Reported(first []bool, at time.Time) {
	when := at.UTC().Format(time.RFC3339)
	for i, c := range r.unreportedAt {
		r.Changes[c].New = first[i]
		r.Changes[c].State = state(!first[i], StatusNew)
		r.Changes[c].FirstReported = when
	}
	r.unreported, r.unreportedAt = nil, nil
}
