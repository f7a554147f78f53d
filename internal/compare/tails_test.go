package compare

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
)

// The real history fixture's clean comparisons: within each group of
// runs made under one setting (runs 01–10; 11–19 with 21–22; 23–30),
// every envelope of 5 consecutive runs against every later window of 3
// consecutive runs, 17 comparisons. None may exit 1. A percentile that a
// baseline or candidate run has too few requests to estimate (the
// endpoints' p99 at 53–364 requests a one-minute run, document_upload's
// and auth_register's p95) is NotJudgeable, with a note saying what it
// needs, and takes no part in its endpoint's correction.
func TestRealCleanWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 29 real runs")
	}
	const envRuns, candRuns = 5, 3
	type window struct {
		name      string
		base, cnd []figures.Run
	}
	var cases []window
	for _, g := range realCleanGroups(t)[:3] {
		for i := 0; i+envRuns+candRuns <= len(g); i++ {
			for j := i + envRuns; j+candRuns <= len(g); j++ {
				cases = append(cases, window{
					name: fmt.Sprintf("%s..%s vs %s..%s", runName(g[i]), runName(g[i+envRuns-1]), runName(g[j]), runName(g[j+candRuns-1])),
					base: g[i : i+envRuns], cnd: g[j : j+candRuns],
				})
			}
		}
	}
	if len(cases) != 17 {
		t.Fatalf("%d clean comparisons, want 17", len(cases))
	}
	withheld := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, err := envelope.Compute(tc.base, envelope.Options{Name: "clean"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Compare(env, tc.cnd, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Figures {
				if f.Verdict == Regression {
					t.Errorf("%s: Regression %+.1f%% [%+.1f, %+.1f] p_holm %.3g", f.Label(), f.ChangePct, f.CILowPct, f.CIHighPct, f.PHolm)
				}
				s := figures.SupportOf(tc.base, f.Endpoint).Join(figures.SupportOf(tc.cnd, f.Endpoint))
				estimated := s.Estimates(f.Name)
				switch {
				case !estimated && f.Verdict != NotJudgeable:
					t.Errorf("%s: %s from %s requests a run, want NotJudgeable", f.Label(), f.Verdict, s.Requests())
				case estimated && f.Verdict == NotJudgeable:
					t.Errorf("%s: NotJudgeable from %s requests a run (%s)", f.Label(), s.Requests(), f.Note)
				case !estimated:
					withheld++
					need := fmt.Sprintf("%s needs ≥ %s requests a run", f.Name.Def().Label, figures.Thousands(f.Name.Def().RequestsNeeded()))
					if !strings.Contains(f.Note, need) || !strings.Contains(f.Note, s.Requests()) || !(f.PHolm != f.PHolm) {
						t.Errorf("%s: note %q, p_holm %v: want %q with the runs' %s requests, untested", f.Label(), f.Note, f.PHolm, need, s.Requests())
					}
				}
			}
			if res.Regressed {
				t.Errorf("exit 1 on a clean comparison")
			}
		})
	}
	if withheld == 0 {
		t.Error("no percentile was withheld: the fixture's endpoints have too few requests for p99")
	}
}

// runName is a run's file name without its extensions: "run-04".
func runName(r figures.Run) string {
	return strings.SplitN(filepath.Base(r.Source), ".", 2)[0]
}

// A NotJudgeable figure in every output: shown with its values in the
// text and Markdown tables with no p, a null p in JSON, a skipped JUnit
// case with its note, and an endpoint family corrected over the figures
// that were tested.
func TestNotJudgeableOutputs(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 8 real runs")
	}
	g := realCleanGroups(t)[0]
	env, err := envelope.Compute(g[:5], envelope.Options{Name: "clean"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compare(env, g[5:8], Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := figure(t, res, "document_upload p99")
	if f.Verdict != NotJudgeable || f.ChangePct == 0 || f.CIHighPct <= f.CILowPct {
		t.Fatalf("document_upload p99: %s %+.1f%% [%+.1f, %+.1f], want NotJudgeable with its change and interval", f.Verdict, f.ChangePct, f.CILowPct, f.CIHighPct)
	}
	if m := figure(t, res, "document_upload median"); !(m.PHolm == m.PHolm) {
		t.Errorf("document_upload median untested: %+v", m)
	}
	var text, md, js strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		if !strings.Contains(out, "document_upload p99: p99 needs ≥ 1,000 requests a run; document_upload had") {
			t.Errorf("%s lacks the note:\n%s", name, out)
		}
		row := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "document_upload p99") && strings.Contains(l, "NotJudgeable") {
				row = l
			}
		}
		if row == "" || !strings.Contains(row, fmt.Sprintf("%+.2f%%", f.ChangePct)) || strings.Contains(row, "NaN") {
			t.Errorf("%s row %q: want the change and NotJudgeable, no NaN", name, row)
		}
	}
	if !strings.Contains(js.String(), `"verdict": "NotJudgeable"`) || strings.Contains(js.String(), "NaN") {
		t.Errorf("json:\n%s", js.String())
	}
	skipped := false
	for _, c := range res.Suite().Cases {
		if c.Name == "document_upload p99" {
			skipped = c.Failure == "" && strings.Contains(c.Skipped, "p99 needs ≥ 1,000 requests a run")
		}
	}
	if !skipped {
		t.Errorf("JUnit: document_upload p99 not skipped with its note: %+v", res.Suite().Cases)
	}
}
