package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseFactors(t *testing.T) {
	for _, c := range []struct {
		in      []string
		want    map[string]float64
		wantErr bool
	}{
		{nil, nil, false},
		{[]string{"auth_login=1.3"}, map[string]float64{"auth_login": 1.3}, false},
		{[]string{"*=1.1", "actor_get=2"}, map[string]float64{"*": 1.1, "actor_get": 2}, false},
		{[]string{"auth_login"}, nil, true},
		{[]string{"=1.2"}, nil, true},
		{[]string{"x=fast"}, nil, true},
		{[]string{"x=-1"}, nil, true},
	} {
		got, err := parseFactors(c.in)
		if (err != nil) != c.wantErr {
			t.Errorf("parseFactors(%q) error %v, want error %v", c.in, err, c.wantErr)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("parseFactors(%q) = %v, want %v", c.in, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("parseFactors(%q)[%s] = %v, want %v", c.in, k, got[k], v)
			}
		}
	}
}

// Bad input to `envelope stack` fails with exit code 2 and a message
// naming what is wrong, before anything starts.
func TestStackBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stack", "--envelope", "no-such-envelope.yaml"}, "no-such-envelope.yaml"},
		{[]string{"stack", "--dir", t.TempDir(), "--prometheus.path", "/nonexistent/prometheus"}, "/nonexistent/prometheus"},
		{[]string{"stack", "--dir", t.TempDir(), "--simulate.latency-factor", "auth_login"}, "ENDPOINT=FACTOR"},
	} {
		var o, e bytes.Buffer
		code := runCLI(c.args, &o, &e)
		if code != 2 || !strings.Contains(e.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message naming %q", c.args, code, e.String(), c.want)
		}
	}
}
