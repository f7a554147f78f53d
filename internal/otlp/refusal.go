package otlp

import "errors"

// Refusal is why a data point was not applied: a typed reason, and
// whether it met a limit (an overflow: series_overflow_total) rather than
// being bad input (bad_lines_total). The receiver reports every refused
// point to Sink.Refuse exactly once, whether the receiver or the sink
// refused it: that is where refusals are counted, and nowhere else.
type Refusal struct {
	Reason   string
	Overflow bool
	Err      error
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// Refuse is a refusal of bad input for reason.
func Refuse(reason string, err error) *Refusal { return &Refusal{Reason: reason, Err: err} }

// Overflow is a refusal over a limit named by reason.
func Overflow(reason string, err error) *Refusal {
	return &Refusal{Reason: reason, Overflow: true, Err: err}
}

// RefusalOf is err as a Refusal; an error of another type is bad input
// (reason "bad_value").
func RefusalOf(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return Refuse("bad_value", err)
}
