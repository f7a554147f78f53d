package exporter

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// writeWebConfig writes a web config with TLS from dir's cert.pem and
// key.pem and one user k6 with password.
func writeWebConfig(t *testing.T, path, certDir, password string) {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  k6: %s\n",
		filepath.Join(certDir, "cert.pem"), filepath.Join(certDir, "key.pem"), hash)
	// Written aside and renamed, as a secret manager rotates a file.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// certOf is the DER certificate of a PEM file.
func certOf(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	return blk.Bytes
}

// A password and a TLS certificate changed in --web.config.file while the
// exporter runs take effect at once on the HTTP port (scrapes, OTLP/HTTP,
// DELETE /api/v1/runs) and on the gRPC port: the old password is
// refused, the new one accepted, new connections get the new
// certificate; no restart.
func TestCredentialsRotate(t *testing.T) {
	dir := t.TempDir()
	dirA, dirB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{dirA, dirB} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	selfSigned(t, dirA)
	selfSigned(t, dirB)
	pool := x509.NewCertPool()
	for _, d := range []string{dirA, dirB} {
		c, err := x509.ParseCertificate(certOf(t, filepath.Join(d, "cert.pem")))
		if err != nil {
			t.Fatal(err)
		}
		pool.AddCert(c)
	}
	webCfg := filepath.Join(dir, "web.yml")
	writeWebConfig(t, webCfg, dirA, "old")
	s := hostileServer(t, Config{WebConfigFile: webCfg})
	hl, gl := serveLoopback(t, s), serveLoopback(t, s, grpcReceiver)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tlsConf := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}

	// httpStatus makes a request on a new connection; it returns the
	// status and the certificate the server showed.
	httpStatus := func(method, path, auth string) (int, []byte) {
		t.Helper()
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf, DisableKeepAlives: true}, Timeout: 20 * time.Second}
		var body *bytes.Reader
		if path == "/v1/metrics" {
			b, _ := proto.Marshal(exportReq(nil, sumMetric("k6_http_reqs", delta, dbl(1, 1))))
			body = bytes.NewReader(b)
		} else {
			body = bytes.NewReader(nil)
		}
		req, _ := http.NewRequestWithContext(ctx, method, "https://"+hl.Addr+path, body)
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode, resp.TLS.PeerCertificates[0].Raw
	}
	// grpcCode exports on a new connection; it returns the status code
	// and the certificate the server showed.
	grpcCode := func(auth string) (codes.Code, []byte) {
		t.Helper()
		var peerCert []byte
		c := tlsConf.Clone()
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			peerCert = cs.PeerCertificates[0].Raw
			return nil
		}
		client, closeConn := dialOTLP(t, gl.Addr, credentials.NewTLS(c))
		defer closeConn()
		cctx, ccancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "authorization", auth), 20*time.Second)
		defer ccancel()
		_, err := client.Export(cctx, exportReq(nil, sumMetric("k6_http_reqs", delta, dbl(1, 1))))
		return status.Code(err), peerCert
	}
	check := func(phase, pass string, wantHTTP int, wantGRPC codes.Code, certDir string) {
		t.Helper()
		want := certOf(t, filepath.Join(certDir, "cert.pem"))
		for _, r := range []struct{ method, path string }{{"GET", "/metrics"}, {"POST", "/v1/metrics"}, {"DELETE", "/api/v1/runs/none"}} {
			code, cert := httpStatus(r.method, r.path, basic("k6", pass))
			w := wantHTTP
			if w == http.StatusOK && r.method == "DELETE" {
				w = http.StatusNotFound // authorized: no such run
			}
			if code != w {
				t.Errorf("%s: HTTP %s %s with password %q: %d, want %d", phase, r.method, r.path, pass, code, w)
			}
			if !bytes.Equal(cert, want) {
				t.Errorf("%s: HTTP served the wrong certificate", phase)
			}
		}
		code, cert := grpcCode(basic("k6", pass))
		if code != wantGRPC {
			t.Errorf("%s: gRPC with password %q: %v, want %v", phase, pass, code, wantGRPC)
		}
		if !bytes.Equal(cert, want) {
			t.Errorf("%s: gRPC served the wrong certificate", phase)
		}
	}
	check("before", "old", http.StatusOK, codes.OK, dirA)
	check("before", "new", http.StatusUnauthorized, codes.Unauthenticated, dirA)
	writeWebConfig(t, webCfg, dirB, "new")
	check("after", "old", http.StatusUnauthorized, codes.Unauthenticated, dirB)
	check("after", "new", http.StatusOK, codes.OK, dirB)
}

// A flood of wrong passwords runs at most MaxHashChecks bcrypt checks at
// once, outside the cache's lock: while they are all held, a call whose
// credentials were already accepted is answered from the cache, and the
// refusals never evict it.
func TestHashChecksBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.yml")
	hash, _ := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err := os.WriteFile(path, []byte("basic_auth_users:\n  k6: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wc, err := newWebConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var inFlight, peak, checks atomic.Int64
	wc.compare = func(h, p []byte) error {
		checks.Add(1)
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		if string(p) == "secret" {
			return bcrypt.CompareHashAndPassword(h, p)
		}
		<-release // a wrong password: held until the valid call is answered
		return errors.New("mismatch")
	}
	valid := basic("k6", "secret")
	if !wc.checkAuth(valid) {
		t.Fatal("valid credentials refused")
	}
	const flood = 64
	var wg sync.WaitGroup
	var accepted atomic.Int64
	for i := range flood {
		wg.Go(func() {
			if wc.checkAuth(basic("k6", fmt.Sprint("wrong-", i))) {
				accepted.Add(1)
			}
		})
	}
	for inFlight.Load() < MaxHashChecks {
		time.Sleep(time.Millisecond)
	}
	answered := make(chan bool, 1)
	go func() { answered <- wc.checkAuth(valid) }()
	select {
	case ok := <-answered:
		if !ok {
			t.Error("valid credentials refused during the flood")
		}
	case <-time.After(30 * time.Second): // only reached when it waits for the held checks
		t.Fatal("valid call waited for the flood's hash checks")
	}
	close(release)
	wg.Wait()
	if accepted.Load() != 0 {
		t.Errorf("%d wrong passwords accepted", accepted.Load())
	}
	if peak.Load() > MaxHashChecks {
		t.Errorf("%d hash checks at once, bound %d", peak.Load(), MaxHashChecks)
	}
	if got := checks.Load(); got != flood+1 {
		t.Errorf("%d hash checks, want %d (one per distinct credential)", got, flood+1)
	}
	if !wc.checkAuth(valid) || checks.Load() != flood+1 {
		t.Error("the flood evicted the valid credentials from the cache")
	}
}

// Over the gRPC port: while a flood of wrong passwords holds every hash
// check, an export with credentials already accepted goes through and is
// stored; the flood is refused UNAUTHENTICATED once released.
func TestGRPCExportDuringPasswordFlood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.yml")
	hash, _ := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err := os.WriteFile(path, []byte("basic_auth_users:\n  k6: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := hostileServer(t, Config{WebConfigFile: path})
	release := make(chan struct{})
	var held atomic.Int64
	s.web.compare = func(h, p []byte) error {
		if string(p) == "secret" {
			return bcrypt.CompareHashAndPassword(h, p)
		}
		held.Add(1)
		<-release
		return errors.New("mismatch")
	}
	sv := serveLoopback(t, s, grpcReceiver)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, closeConn := dialOTLP(t, sv.Addr, insecure.NewCredentials())
	defer closeConn()
	export := func(auth string, v float64) error {
		_, err := client.Export(metadata.AppendToOutgoingContext(ctx, "authorization", auth),
			exportReq(nil, sumMetric("k6_http_reqs", delta, dbl(v, 1))))
		return err
	}
	if err := export(basic("k6", "secret"), 1); err != nil {
		t.Fatalf("first valid export: %v", err)
	}
	const flood = 64
	var wg sync.WaitGroup
	var codesSeen sync.Map
	for i := range flood {
		wg.Go(func() {
			codesSeen.Store(i, status.Code(export(basic("k6", fmt.Sprint("wrong-", i)), 100)))
		})
	}
	for held.Load() < MaxHashChecks {
		time.Sleep(time.Millisecond)
	}
	if err := export(basic("k6", "secret"), 2); err != nil {
		t.Errorf("valid export during the flood: %v", err)
	}
	if got := math.Float64frombits(s.st.families["http_reqs"].snapshot()[0].bits.Load()); got != 3 {
		t.Errorf("total %v while the flood is held, want 3 (both valid exports)", got)
	}
	if held.Load() > MaxHashChecks {
		t.Errorf("%d hash checks at once, bound %d", held.Load(), MaxHashChecks)
	}
	close(release)
	wg.Wait()
	codesSeen.Range(func(_, c any) bool {
		if c.(codes.Code) != codes.Unauthenticated {
			t.Errorf("wrong password: %v", c)
		}
		return true
	})
	cancel()
	sv.stop()
	if sv.err != nil {
		t.Errorf("gRPC receiver: %v", sv.err)
	}
}
