package ecs

import (
	"log/slog"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// The collector is on inside ECS (the variable is set), off outside it,
// and off with --no-ecs.enabled; a bad endpoint is a startup error.
func TestFlags(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     string
		args    []string
		wantOn  bool
		wantErr bool
	}{
		{"outside ECS", "", nil, false, false},
		{"inside ECS", "http://169.254.170.2/v4/abc", nil, true, false},
		{"flag overrides", "", []string{"--ecs.metadata-uri=http://127.0.0.1:1/v4"}, true, false},
		{"disabled", "http://169.254.170.2/v4/abc", []string{"--no-ecs.enabled"}, false, false},
		{"bad endpoint", "169.254.170.2/v4", nil, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvMetadataURI, tt.env)
			app := kingpin.New("exporter", "")
			f := AddFlags(app.Command("serve", ""))
			if _, err := app.Parse(append([]string{"serve"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			c, err := f.Collector(slog.New(slog.DiscardHandler))
			if (err != nil) != tt.wantErr || (c != nil) != tt.wantOn {
				t.Fatalf("collector %v, err %v; want on %v, err %v", c, err, tt.wantOn, tt.wantErr)
			}
		})
	}
}
