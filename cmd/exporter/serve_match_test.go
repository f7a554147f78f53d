package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/envelope-dev/envelope/internal/envelope"
)

// serve warns about an envelope whose match needs a tag it does not
// export, and about one that selects none of the series replayed; an
// envelope that judges every test, or whose match selects a served
// series, is not warned about.
func TestServeWarnsAboutUnselectingMatch(t *testing.T) {
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "k6_http_reqs_total", Help: "h"}, []string{"testid", "envelope"})
	reqs.WithLabelValues("run-1", "").Inc()
	reg := prometheus.NewRegistry()
	reg.MustRegister(reqs)
	tests := []struct {
		match string
		allow []string
		want  string // "" for no warning
	}{
		{`envelope="my-baseline"`, nil, "add --k6.allow-tag envelope"},
		{`envelope="my-baseline"`, []string{"envelope"}, "selects none of the k6 series replayed"},
		{`testid=~"run-.*"`, nil, ""},
		{``, nil, ""},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		log := slog.New(slog.NewTextHandler(&b, nil))
		envs := []*envelope.Envelope{{Name: "my-baseline", Match: tt.match}}
		warnUnexportedMatch(log, envs, tt.allow)
		if tt.allow != nil {
			warnUnselected(log, envs, reg)
		}
		got := b.String()
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("match %q, allow %v: logged %q, want %q", tt.match, tt.allow, got, tt.want)
		}
		if tt.want != "" && strings.Count(got, "\n") != 1 {
			t.Errorf("match %q: %d lines, want one:\n%s", tt.match, strings.Count(got, "\n"), got)
		}
	}
}
