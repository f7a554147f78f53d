package envelope

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/k6"
)

// Real k6 v2.2.0 summary exports of the baseline-mix workload (see
// testdata): three baseline runs, a regressed run with auth errors, and a
// 20-second run of the same script.
func TestRealFixtures(t *testing.T) {
	p := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join("testdata", n))
		}
		return out
	}
	tests := []struct {
		name    string
		files   []string
		wantErr string
		verdict string
		reason  string
	}{
		{name: "three baselines", files: p("baseline-a.summary.json", "baseline-b.summary.json", "baseline-c.summary.json"),
			verdict: "below saturation", reason: "no error emergence: 0 of 60032 requests failed in 3 runs"},
		{name: "with the regressed run", files: p("baseline-a.summary.json", "baseline-b.summary.json", "regressed-auth-errors.summary.json"),
			verdict: "signs of saturation", reason: "error emergence: 18 of 59474 requests failed"},
		{name: "a short run among them", files: p("baseline-a.summary.json", "otlp-sample.summary.json"),
			wantErr: "duration: testdata/baseline-a.summary.json ran 6m1s, testdata/otlp-sample.summary.json ran 22s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ReadFiles(tt.files, k6.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			env, err := Compute(in, Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if env.Saturation.Verdict != tt.verdict || !strings.Contains(strings.Join(env.Saturation.Reasons, "\n"), tt.reason) {
				t.Errorf("saturation = %+v, want %q with %q", env.Saturation, tt.verdict, tt.reason)
			}
			// The four custom trends of the script become endpoint bands.
			for _, ep := range []string{"actor_get", "auth_login", "auth_register", "document_upload"} {
				if e, ok := env.Endpoints[ep]; !ok || e.P95.N != len(tt.files) || e.Share <= 0 {
					t.Errorf("endpoint %s = %+v", ep, e)
				}
			}
			if env.Provenance.Sources[0].SHA256 == "" || env.Provenance.Workload.VUs != 50 {
				t.Errorf("provenance = %+v", env.Provenance)
			}
		})
	}
}
