package exporter

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A 404 for an unknown run names the testid, clipped: a reply never
// echoes back whatever a client sent.
func TestDeleteUnknownRunClipsEcho(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   string
		want string
	}{
		{"short-run", `no series with testid \"short-run\"`},
		{strings.Repeat("x", 100000), "(100000 bytes)"},
		{strings.Repeat("é", 200), "(400 bytes)"}, // cut at a rune boundary
	} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/api/v1/runs/"+c.id, nil))
		body := rec.Body.String()
		if rec.Code != http.StatusNotFound || !strings.Contains(body, c.want) || len(body) > 512 {
			t.Errorf("DELETE of a %d-byte testid: %d, %d-byte body %q", len(c.id), rec.Code, len(body), body[:min(len(body), 200)])
		}
	}
}
