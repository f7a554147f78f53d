package cloudwatch

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// Start is a no-op without configuration, rejects half a configuration,
// and needs a region; with one it polls the configured endpoint.
func TestStart(t *testing.T) {
	// Keep the SDK away from any real configuration and from IMDS.
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	_, srv := newFakeCloudWatch(t, filepath.Join("testdata", "get_metric_data.json"))
	for _, tt := range []struct {
		name    string
		args    []string
		wantOn  bool
		wantErr string
	}{
		{"off", nil, false, ""},
		{"cluster only", []string{"--cloudwatch.cluster=perf"}, false, "needs at least one --cloudwatch.service"},
		{"no region", []string{"--cloudwatch.cluster=perf", "--cloudwatch.service=api"}, false, "no region"},
		{"on", []string{"--cloudwatch.cluster=perf", "--cloudwatch.service=api", "--cloudwatch.region=us-east-1", "--cloudwatch.endpoint=" + srv.URL}, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			app := kingpin.New("exporter", "")
			cfg := AddFlags(app.Command("serve", ""))
			if _, err := app.Parse(append([]string{"serve"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c, err := Start(ctx, cfg, slog.New(slog.DiscardHandler))
			if (err != nil) != (tt.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if (c != nil) != tt.wantOn {
				t.Fatalf("collector = %v, want on %v", c, tt.wantOn)
			}
		})
	}
}
