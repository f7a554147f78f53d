package exporter

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
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
		s.writeJSON(w, map[string]any{"error": fmt.Sprintf("no series with testid %q", id)})
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

// readWebConfig reads an exporter-toolkit web config file; nil without
// one.
func readWebConfig(path string) (*web.Config, error) {
	if path == "" {
		return nil, nil
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("web config: %w", err)
	}
	c := &web.Config{TLSConfig: web.TLSConfig{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}}
	dec := yaml.NewDecoder(bytes.NewReader(content))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && err.Error() != "EOF" {
		return nil, fmt.Errorf("web config %s: %w", path, err)
	}
	c.TLSConfig.SetDirectory(filepath.Dir(path))
	return c, nil
}

// grpcTLS is the gRPC receiver's TLS configuration from the web
// config's TLS settings (nil without TLS).
func grpcTLS(path string) (*tls.Config, error) {
	c, err := readWebConfig(path)
	if err != nil || c == nil || !c.TLSConfig.IsEnabled() {
		return nil, err
	}
	tc, err := web.ConfigToTLSConfig(&c.TLSConfig)
	if err != nil {
		return nil, fmt.Errorf("web config %s: TLS for the OTLP gRPC receiver: %w", path, err)
	}
	return tc, nil
}

// grpcAuth checks gRPC authorization headers against the web config's
// basic_auth_users, as exporter-toolkit does for HTTP; nil without users.
// Results are cached (bounded) so bcrypt runs once per credential.
func grpcAuth(path string) (func(string) bool, error) {
	c, err := readWebConfig(path)
	if err != nil || c == nil || len(c.Users) == 0 {
		return nil, err
	}
	users := map[string]string{}
	for u, p := range c.Users {
		users[u] = string(p)
	}
	var mu sync.Mutex
	cache := map[string]bool{}
	return func(header string) bool {
		raw, ok := strings.CutPrefix(header, "Basic ")
		if !ok {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if ok, hit := cache[raw]; hit {
			return ok
		}
		dec, err := base64.StdEncoding.DecodeString(raw)
		if err != nil {
			return false
		}
		user, pass, _ := strings.Cut(string(dec), ":")
		hash, known := users[user]
		if !known {
			// A fixed hash ("fakepassword"), so unknown users take as long.
			hash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
		}
		ok = known && bcrypt.CompareHashAndPassword([]byte(hash), []byte(pass)) == nil
		if len(cache) >= 64 {
			clear(cache)
		}
		cache[raw] = ok
		return ok
	}, nil
}
