package compare

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// realRatioResult compares the real regressed run (auth ×1.25) with the
// envelope of the three real 6-minute baseline runs, read from their
// point streams: every endpoint's median is judged against the run's
// other endpoints.
func realRatioResult(t *testing.T) *Result {
	t.Helper()
	in, err := figures.ReadFiles(fixtures.Baselines(t), figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compute(in, envelope.Options{Name: "real"})
	if err != nil {
		t.Fatal(err)
	}
	cand, err := figures.ReadFiles([]string{fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz")}, figures.LoadOptions(0, ""))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compare(env, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// number reads the first number of a cell ("6.65 ms", "-0.29%").
func number(t *testing.T, cell string) float64 {
	t.Helper()
	m := regexp.MustCompile(`[-+]?[0-9]+(\.[0-9]+)?`).FindString(cell)
	x, err := strconv.ParseFloat(m, 64)
	if err != nil {
		t.Fatalf("cell %q holds no number", cell)
	}
	return x
}

// addsUp says whether a change cell is the change between two level
// cells, to within what their rounding allows.
func addsUp(t *testing.T, base, cand, change string) bool {
	t.Helper()
	b, c, ch := number(t, base), number(t, cand), number(t, change)
	// Four significant digits or two decimals of a value above 3: at
	// most 0.2% of rounding in the ratio of two of them.
	return math.Abs(100*(c/b-1)-ch) < 0.2
}

// Each row of the real comparison's text and Markdown tables adds up:
// the change beside the endpoint's own medians is their change, and the
// change beside its ratio to the other endpoints is the ratio's, which
// is what the interval and the verdict judge. The JSON carries both
// levels, and the JUnit messages say which is which.
func TestRealRatioRowsAddUp(t *testing.T) {
	res := realRatioResult(t)
	var txt, md, js, junit bytes.Buffer
	for _, w := range []struct {
		write func(*bytes.Buffer) error
		buf   *bytes.Buffer
	}{{func(b *bytes.Buffer) error { return res.WriteText(b) }, &txt}, {func(b *bytes.Buffer) error { return res.WriteMarkdown(b) }, &md},
		{func(b *bytes.Buffer) error { return res.WriteJSON(b) }, &js}, {func(b *bytes.Buffer) error { return res.WriteJUnit(b) }, &junit}} {
		if err := w.write(w.buf); err != nil {
			t.Fatal(err)
		}
	}
	var doc struct {
		Figures []struct {
			Name      string  `json:"name"`
			Endpoint  string  `json:"endpoint"`
			Baseline  float64 `json:"baseline"`
			Candidate float64 `json:"candidate"`
			ChangePct float64 `json:"change_pct"`
			Absolute  *Change `json:"absolute"`
			Ratio     *Ratio  `json:"ratio_to_others"`
		} `json:"figures"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Out     string `xml:"system-out"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &suites); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, ep := range []string{"actor_get", "auth_login", "auth_register", "document_upload"} {
		label := ep + " median vs other endpoints"
		f := figure(t, res, ep+" median")
		if f.Ratio == nil || f.Absolute == nil {
			t.Fatalf("%s: judged against %q, ratio %+v, own change %+v: want both", label, f.Against, f.Ratio, f.Absolute)
		}
		if got := 100 * (f.Ratio.Candidate/f.Ratio.Baseline - 1); math.Abs(got-f.ChangePct) > 1e-6 {
			t.Errorf("%s: ratio %.5g → %.5g is %+.4f%%, judged change %+.4f%%", label, f.Ratio.Baseline, f.Ratio.Candidate, got, f.ChangePct)
		}

		text := tableRow(t, txt.String(), label, regexp.MustCompile(`\s{2,}`))
		mdRow := tableRow(t, md.String(), "| "+label, regexp.MustCompile(`\s*\|\s*`))
		if mdRow[0] == "" {
			mdRow = mdRow[1:]
		}
		for _, row := range [][]string{text, mdRow} {
			rows++
			// label, baseline, candidate, change, ratio, ratio change, CI, …, verdict
			if len(row) < 8 {
				t.Fatalf("%s: row %q", label, row)
			}
			if !addsUp(t, row[1], row[2], row[3]) {
				t.Errorf("%s: own medians %s → %s beside change %s, which is not theirs", label, row[1], row[2], row[3])
			}
			lv := strings.Split(row[4], "→")
			if len(lv) != 2 || !addsUp(t, lv[0], lv[1], row[5]) {
				t.Errorf("%s: ratio %q beside change %s, which is not its", label, row[4], row[5])
			}
			if number(t, row[5]) != math.Round(100*f.ChangePct)/100 || row[len(row)-1] != string(f.Verdict) {
				t.Errorf("%s: judged change %s, verdict %s; want %+.2f%%, %s", label, row[5], row[len(row)-1], f.ChangePct, f.Verdict)
			}
		}

		found := false
		for _, j := range doc.Figures {
			if j.Endpoint != ep || j.Name != "median" {
				continue
			}
			found = true
			if j.Ratio == nil || j.Absolute == nil || j.Ratio.Baseline != f.Ratio.Baseline || j.Ratio.Candidate != f.Ratio.Candidate ||
				math.Abs(100*(j.Candidate/j.Baseline-1)-j.Absolute.ChangePct) > 0.5 {
				t.Errorf("%s: JSON baseline %v, candidate %v, own change %+v, ratio %+v: want the own levels with their change and the ratio's levels",
					label, j.Baseline, j.Candidate, j.Absolute, j.Ratio)
			}
		}
		if !found {
			t.Errorf("%s: not in the JSON", label)
		}
		for _, c := range suites.Cases {
			if c.Name != ep+" median" {
				continue
			}
			if !strings.Contains(c.Out, "its ratio to the run's other endpoints") || !strings.Contains(c.Out, "its own median") {
				t.Errorf("%s: JUnit output %q does not say which change is the ratio's", label, c.Out)
			}
			if c.Failure != nil && (!strings.Contains(c.Failure.Message, "ratio to the other endpoints "+f.ratioCell()) || !strings.Contains(c.Failure.Message, "own median ")) {
				t.Errorf("%s: JUnit failure %q does not give the ratio and the own median", label, c.Failure.Message)
			}
		}
	}
	if rows != 8 {
		t.Errorf("%d rows checked, want 8", rows)
	}
	// A figure judged on its own has no ratio, and its change is beside
	// its own values.
	p95 := tableRow(t, txt.String(), "auth_login p95", regexp.MustCompile(`\s{2,}`))
	if p95[4] != "-" || p95[5] != "-" || !addsUp(t, p95[1], p95[2], p95[3]) {
		t.Errorf("auth_login p95 row %q", p95)
	}
}

// tableRow is the cells of the row of out starting with prefix.
func tableRow(t *testing.T, out, prefix string, sep *regexp.Regexp) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return sep.Split(strings.TrimRight(l, " |"), -1)
		}
	}
	t.Fatalf("no row %q in:\n%s", prefix, out)
	return nil
}
