package exporter

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// readWebConfig parses an exporter-toolkit web config file's content.
func readWebConfig(path string, content []byte) (*web.Config, error) {
	c := &web.Config{TLSConfig: web.TLSConfig{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}}
	dec := yaml.NewDecoder(bytes.NewReader(content))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && err.Error() != "EOF" {
		return nil, fmt.Errorf("web config %s: %w", path, err)
	}
	c.TLSConfig.SetDirectory(filepath.Dir(path))
	return c, nil
}

// MaxHashChecks bounds the bcrypt checks of gRPC credentials running at
// once: a flood of wrong passwords queues for these, and never delays a
// call whose credentials were already checked.
const MaxHashChecks = 2

// maxCachedCredentials bounds each credential cache (accepted, refused).
const maxCachedCredentials = 64

// webConfig applies the current --web.config.file to the gRPC receiver,
// as exporter-toolkit does for HTTP: the file is read again for each
// call (basic auth) and each connection (TLS), so a rotated password or
// certificate takes effect at once on both ports, without a restart.
type webConfig struct {
	path   string
	hashes chan struct{} // MaxHashChecks slots
	// compare is bcrypt's; tests count and hold the checks.
	compare func(hash, password []byte) error

	mu      sync.Mutex
	content []byte // the file as last parsed
	cur     *webConfigState
}

// webConfigState is one version of the file: its settings and the
// credentials checked against it.
type webConfigState struct {
	cfg   *web.Config
	users map[string]string

	mu       sync.Mutex
	accepted map[string]bool // authorization header values; refusals never evict these
	refused  map[string]bool
}

func newWebConfig(path string) (*webConfig, error) {
	wc := &webConfig{path: path, hashes: make(chan struct{}, MaxHashChecks), compare: bcrypt.CompareHashAndPassword}
	if _, err := wc.load(); err != nil {
		return nil, err
	}
	return wc, nil
}

// load returns the file's current settings, parsed again when its
// content changed. An unreadable or invalid file is an error: callers
// refuse (fail closed) rather than keep credentials that were replaced.
func (wc *webConfig) load() (*webConfigState, error) {
	content, err := os.ReadFile(wc.path)
	if err != nil {
		return nil, fmt.Errorf("web config: %w", err)
	}
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if wc.cur != nil && bytes.Equal(content, wc.content) {
		return wc.cur, nil
	}
	c, err := readWebConfig(wc.path, content)
	if err != nil {
		return nil, err
	}
	st := &webConfigState{cfg: c, users: map[string]string{}, accepted: map[string]bool{}, refused: map[string]bool{}}
	for u, p := range c.Users {
		st.users[u] = string(p)
	}
	wc.content, wc.cur = content, st
	return st, nil
}

// tlsConfig is the TLS configuration of a new gRPC connection, from the
// current file (nil, nil without TLS).
func (wc *webConfig) tlsConfig() (*tls.Config, error) {
	st, err := wc.load()
	if err != nil || !st.cfg.TLSConfig.IsEnabled() {
		return nil, err
	}
	tc, err := web.ConfigToTLSConfig(&st.cfg.TLSConfig)
	if err != nil {
		return nil, fmt.Errorf("web config %s: TLS for the OTLP gRPC receiver: %w", wc.path, err)
	}
	tc.NextProtos = []string{"h2"}
	return tc, nil
}

// rotatingTLS serves each new connection with the current file's TLS
// settings; the first is checked at start, so a broken one stops it.
func (wc *webConfig) rotatingTLS() (*tls.Config, error) {
	tc, err := wc.tlsConfig()
	if err != nil || tc == nil {
		return nil, err
	}
	return &tls.Config{
		NextProtos: []string{"h2"},
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			tc, err := wc.tlsConfig()
			if err == nil && tc == nil {
				err = errors.New("TLS is no longer configured in the web config")
			}
			return tc, err
		},
	}, nil
}

// checkAuth checks a gRPC authorization header against the current
// basic_auth_users (any header passes without users). Checked headers
// are cached per version of the file; bcrypt runs outside every lock,
// at most MaxHashChecks at once.
func (wc *webConfig) checkAuth(header string) bool {
	st, err := wc.load()
	if err != nil {
		return false
	}
	if len(st.users) == 0 {
		return true
	}
	raw, ok := strings.CutPrefix(header, "Basic ")
	if !ok {
		return false
	}
	st.mu.Lock()
	ok, refused := st.accepted[raw], st.refused[raw]
	st.mu.Unlock()
	if ok || refused {
		return ok
	}
	wc.hashes <- struct{}{}
	ok = st.verify(raw, wc.compare)
	<-wc.hashes
	st.mu.Lock()
	defer st.mu.Unlock()
	cache := st.refused
	if ok {
		cache = st.accepted
	}
	if len(cache) >= maxCachedCredentials {
		clear(cache)
	}
	cache[raw] = true
	return ok
}

// verify checks base64 user:password against the users' bcrypt hashes.
func (st *webConfigState) verify(raw string, compare func(hash, password []byte) error) bool {
	dec, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return false
	}
	user, pass, _ := strings.Cut(string(dec), ":")
	hash, known := st.users[user]
	if !known {
		// A fixed hash ("fakepassword"), so unknown users take as long.
		hash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
	}
	return compare([]byte(hash), []byte(pass)) == nil && known
}
