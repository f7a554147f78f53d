package report

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/demo"
	"github.com/envelope-dev/envelope/internal/envelope"
)

// A one-run envelope (allowed, with a warning) must not be reported with
// degenerate figures: no "x–x" bands, no interval on 0 degrees of freedom,
// and singular wording for its one outlying maximum.
func TestEnvelopeReportSingleRun(t *testing.T) {
	in, err := demo.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compute(in[:1], envelope.Options{Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	text := markdown(t, env, nil)
	for _, bad := range []string{
		"0 degrees of freedom",
		"a single maxima",
		"sit above the aggregate p99 band (931.4–931.4",
		"55.97–55.97",
		"44.50–44.50",
		"2.1–2.1 s",
	} {
		if strings.Contains(text, bad) {
			t.Errorf("single-run report contains %q", bad)
		}
	}
	for _, want := range []string{
		"need at least two runs",
		"| 2.14 s | - |",
		"| n/a (fewer than 2 runs) |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("single-run report lacks %q", want)
		}
	}
	// Several runs keep their ranges (the reference baseline report's rounding).
	all, err := demo.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	if text := markdown(t, all, nil); !strings.Contains(text, "922.7–937.2") || !strings.Contains(text, "2.14 / 2.79 s") {
		t.Errorf("five-run report lost its bands")
	}
}
