package exporter

// Ingestion is counted here and only here: every input reports the
// points it stored to accepted and each refused point to refuse.

import (
	"errors"

	"github.com/envelope-dev/envelope/internal/otlp"
)

// accepted counts points stored from src: the one place
// points_ingested_total grows.
func (s *Server) accepted(src string, points int) {
	if points > 0 {
		s.points.WithLabelValues(src).Add(float64(points))
	}
}

// refuse counts points refused (or repaired) from src, whichever input
// they came from and wherever they were judged: the one place
// bad_lines_total and series_overflow_total grow. Limits count as
// overflow, everything else as bad input by reason; bad input is also
// logged, at most once every 10 s per source and reason.
func (s *Server) refuse(src string, r *otlp.Refusal, points int) {
	if points <= 0 {
		return
	}
	if r.Overflow {
		s.overflow.WithLabelValues(r.Reason).Add(float64(points))
		return
	}
	s.bad.WithLabelValues(src, r.Reason).Add(float64(points))
	s.rlog.warn(src+"_"+r.Reason, "bad k6 input", "source", src, "reason", r.Reason, "err", r.Err)
}

// refusalOf types a store error: a limit's refusal as it is, anything
// else as bad input with its bad_lines_total reason.
func refusalOf(err error) *otlp.Refusal {
	var r *otlp.Refusal
	if errors.As(err, &r) {
		return r
	}
	return otlp.Refuse(badReason(err), err)
}
