package rules

import (
	"errors"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
)

// The error alert is judged against the envelope's own error record: a
// missing errors section is an error naming the field (not "zero errors"),
// and an envelope that holds failed requests allows at least its own
// error ratio instead of alerting on any failure.
func TestErrorBoundFollowsEnvelope(t *testing.T) {
	seed := testEnvelopes(t)["seed.envelope.json"]
	cases := []struct {
		name      string
		errs      envelope.Errors
		tolerance float64
		wantErr   string
		wantZero  bool
		wantRatio float64
	}{
		{name: "missing errors section", errs: envelope.Errors{}, wantErr: "errors.total"},
		{name: "failed above total", errs: envelope.Errors{Failed: 10, Total: 5}, wantErr: "errors.failed"},
		{name: "zero errors, zero tolerance", errs: envelope.Errors{Failed: 0, Total: 1000}, wantZero: true},
		{name: "envelope holds 1% errors", errs: envelope.Errors{Failed: 10, Total: 1000, Rate: 0.01}, wantRatio: 0.01},
		{name: "tolerance above envelope rate", errs: envelope.Errors{Failed: 10, Total: 1000, Rate: 0.01}, tolerance: 0.05, wantRatio: 0.05},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := *seed
			e.Errors = tc.errs
			e.Tolerance.ErrorRatio = tc.tolerance
			c, err := Calibrate(&e)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				if tc.wantErr == "errors.total" && !errors.Is(err, ErrMissingField) {
					t.Fatalf("error %v does not wrap ErrMissingField", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Errors.Zero != tc.wantZero || c.Errors.Ratio != tc.wantRatio {
				t.Fatalf("error bound %+v, want zero=%v ratio=%g", c.Errors, tc.wantZero, tc.wantRatio)
			}
		})
	}
}
