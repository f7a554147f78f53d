package exporter

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// ExpireRuns removes the runs whose last point arrived more than
// Config.SeriesTTL before now, with their OTLP stream state; it returns
// the series removed. Run and Serve call it every few seconds.
func (s *Server) ExpireRuns(now time.Time) int {
	if s.cfg.SeriesTTL <= 0 {
		return 0
	}
	n := s.st.expire(now, s.cfg.SeriesTTL)
	s.otlp.Expire(now.Add(-s.cfg.SeriesTTL))
	if n > 0 {
		s.log.Info("expired k6 series", "series", n, "ttl", s.cfg.SeriesTTL)
	}
	return n
}

// DeleteRun removes every series of a run (its testid) at once; it
// returns how many (0: no such run).
func (s *Server) DeleteRun(testid string) int { return s.st.deleteRun(testid) }

// expireLoop applies the TTL until ctx ends, checking at a tenth of it
// (at least every second, at most every minute).
func (s *Server) expireLoop(ctx context.Context) {
	every := min(max(s.cfg.SeriesTTL/10, time.Second), time.Minute)
	tick := time.NewTicker(every)
	defer tick.Stop()
	clock := time.NewTicker(time.Second) // runs are stamped with this clock
	defer clock.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-clock.C:
			s.st.clock.Store(now.UnixNano())
		case now := <-tick.C:
			s.ExpireRuns(now)
		}
	}
}

// deleteRun serves DELETE /api/v1/runs/{testid}: 200 with the number of
// series removed, 404 when no series carries that testid. The web
// config's basic auth guards it as every other path.
func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("testid")
	n := s.DeleteRun(id)
	w.Header().Set("Content-Type", "application/json")
	if n == 0 {
		w.WriteHeader(http.StatusNotFound)
		s.writeJSON(w, map[string]any{"error": fmt.Sprintf("no series with testid %q", clip(id))})
		return
	}
	s.log.Info("deleted run", "testid", id, "series", n)
	s.writeJSON(w, map[string]any{"testid": id, "series_removed": n})
}

// writeJSON encodes v as the response body. The status is already sent,
// so a failed write (the client went away) can only be logged.
func (s *Server) writeJSON(w http.ResponseWriter, v any) {
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.log.Debug("writing response", "err", err)
	}
}

// clip shortens a client's value echoed in a reply: a reply is no place
// to send back whatever a client sent.
func clip(v string) string {
	const keep = 128
	if len(v) <= keep {
		return v
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", v[:cut], len(v))
}
