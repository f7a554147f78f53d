package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/compare"
	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/figures"
)

// The envelope report's minimum detectable change is the one compare
// gives: for one candidate run compare takes the candidate's spread from
// the baseline, so its MDC must equal the report's to the printed digit;
// the report names 1, 3 and 5 runs.
func TestEnvelopeReportMDCAgreesWithCompare(t *testing.T) {
	env, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	in, err := demo.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	md := markdown(t, env, nil)
	for _, k := range []int{1, 3, 5} {
		m, ok := env.MDC(figures.RPS, k)
		if !ok {
			t.Fatalf("no MDC for %d runs", k)
		}
		word := "runs"
		if k == 1 {
			word = "run"
		}
		if want := fmt.Sprintf("%.1f%% with %d %s", 100*m, k, word); !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	res, err := compare.Compare(env, in[4:5], compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m1, _ := env.MDC(figures.RPS, 1)
	for _, f := range res.Figures {
		if f.Name == figures.RPS && f.Endpoint == "" {
			if got, want := fmt.Sprintf("%.1f", f.MDCPct), fmt.Sprintf("%.1f", 100*m1); got != want {
				t.Errorf("compare's MDC for one run %s%%, the report's %s%%", got, want)
			}
			return
		}
	}
	t.Fatal("compare gave no throughput figure")
}
