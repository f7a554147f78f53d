package backtest

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/envelope-dev/envelope/internal/fixtures"
	"github.com/envelope-dev/envelope/internal/rules"
)

// A backtest says when the envelope's match selects none of a run's
// series, naming the match and the tags the run carries, instead of
// reporting "no alert fired"; a match the run carries judges it, and the
// regressed run fires.
func TestMatchSelectsRun(t *testing.T) {
	regressed := fixtures.Path(t, "k6/baseline-mix-v2.2.0/regressed-auth-errors.ndjson.gz")
	for _, tt := range []struct {
		match     string
		unmatched []string // substrings of Run.Unmatched; nil: the run is judged
	}{
		{`envelope="my-baseline"`, []string{`envelope="my-baseline" selects none of the run's series`, "testid (regressed-auth-errors)", "--tag"}},
		{`testid=~"(baseline|regressed)-.*"`, nil},
	} {
		t.Run(tt.match, func(t *testing.T) {
			env := realEnvelope(t)
			env.Match = tt.match
			r, err := File(context.Background(), env, rulesFor(t, env), regressed, Options{})
			if err != nil {
				t.Fatal(err)
			}
			text := (&Report{Runs: []Run{*r}}).Text()
			if tt.unmatched == nil {
				if r.Unmatched != "" {
					t.Errorf("unmatched %q", r.Unmatched)
				}
				if !strings.Contains(strings.Join(names(r), " "), rules.AlertRequestsFailing) {
					t.Errorf("%s did not fire on the regressed run; fired %v", rules.AlertRequestsFailing, names(r))
				}
				return
			}
			for _, s := range tt.unmatched {
				if !strings.Contains(r.Unmatched, s) {
					t.Errorf("unmatched %q lacks %q", r.Unmatched, s)
				}
			}
			if !strings.Contains(text, "nothing was judged: the envelope's match "+tt.match) || strings.Contains(text, "no alert fired") {
				t.Errorf("text does not say that nothing was judged:\n%s", text)
			}
		})
	}
}

// A match on a tag the exporter does not keep by default (envelope) is
// kept as a label in the backtest, as serve keeps it with --k6.allow-tag,
// so the rules scoped to it see the runs tagged for it.
func TestMatchTagKept(t *testing.T) {
	env := realEnvelope(t)
	env.Match = `envelope="history-shared"`
	o := Options{}
	pr, err := prepare(env, rulesFor(t, env), fixtures.Path(t, "k6/history-v2.2.0/run-01.ndjson.gz"), &o)
	if err != nil {
		t.Fatal(err)
	}
	store := newMemStore()
	if err := pr.r.write(store, pr.up, pr.lastSlot); err != nil {
		t.Fatal(err)
	}
	m := labels.MustNewMatcher(labels.MatchEqual, "envelope", "history-shared")
	n := 0
	for _, s := range store.byKey {
		if m.Matches(s.lset.Get("envelope")) {
			n++
		}
	}
	if n == 0 || n != len(store.byKey)-1 { // every k6 series; up has no tags
		t.Errorf("%d of %d stored series carry envelope=\"history-shared\"", n, len(store.byKey))
	}
}
