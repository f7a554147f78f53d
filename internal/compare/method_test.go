package compare

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// Each figure's method names its interval once, never glued to the
// method option's name.
func TestFigureMethodNames(t *testing.T) {
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	in, err := demo.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	runs := in[3:5]
	// The same envelope as an older file has it: endpoint bands only.
	bands := *env
	bands.Runs = append([]envelope.Run(nil), env.Runs...)
	for i := range bands.Runs {
		bands.Runs[i].Endpoints = nil
	}
	for _, tc := range []struct {
		method    string
		env       *envelope.Envelope
		bandsOnly bool
	}{{"welch", env, false}, {"bootstrap", env, false}, {"welch", &bands, true}} {
		method := tc.method
		res, err := Compare(tc.env, runs, Options{Method: method})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range res.Figures {
			if f.Verdict == NoData {
				continue
			}
			if strings.Contains(f.Method, "logwelch") || strings.Contains(f.Method, ")bootstrap") || strings.HasSuffix(f.Method, method) && f.Method != method {
				t.Errorf("%s %s %s: method %q", method, f.Name, f.Endpoint, f.Method)
			}
			var want string
			switch {
			case f.Name == "error_rate":
				want = "binomial (Wilson interval)"
			case f.Endpoint != "" && tc.bandsOnly:
				want = "welch-log, baseline spread from the band range"
			case method == "bootstrap":
				want = "bootstrap over runs (10000 resamples)"
			default:
				want = "run-level log (between-run spread from per-run values"
			}
			if !strings.HasPrefix(f.Method, want) {
				t.Errorf("%s %s %s: method %q, want %q", method, f.Name, f.Endpoint, f.Method, want)
			}
		}
	}
}
