package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The stack prints browser links only when Prometheus serves its UI; a
// build without UI assets (go tool prometheus) gets the API links.
func TestPrometheusLinks(t *testing.T) {
	cases := []struct {
		name   string
		status int
		want   string
		reject string
	}{
		{"with UI", http.StatusOK, "/rules, alerts: ", "/api/v1/"},
		{"without UI assets", http.StatusInternalServerError, "/api/v1/rules", "no-such-text"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/rules" {
					t.Errorf("probed %s, want /rules", r.URL.Path)
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			got := prometheusLinks(context.Background(), srv.URL)
			if !strings.Contains(got, tc.want) || !strings.Contains(got, srv.URL) {
				t.Fatalf("links %q, want %q", got, tc.want)
			}
			if strings.Contains(got, tc.reject) {
				t.Fatalf("links %q contain %q", got, tc.reject)
			}
			if tc.status != http.StatusOK && !strings.Contains(got, srv.URL+"/api/v1/alerts") {
				t.Fatalf("links %q lack the alerts API", got)
			}
		})
	}
}
