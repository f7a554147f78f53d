package backtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
	"github.com/envelope-dev/envelope/internal/figures"
	"github.com/envelope-dev/envelope/internal/fixtures"
)

// Leave-one-out over the real clean runs: each run backtested against the
// rules generated from the envelope of the other runs made under the same
// settings (the history fixture's runs 01–10, 11–19 with 21–22, 23–30;
// the three 6-minute baselines). Every alert is a false alarm on real
// data; docs/rules.md gives the count, and the test fails when it grows.
func TestRealLeaveOneOutAlerts(t *testing.T) {
	if testing.Short() {
		t.Skip("backtests 32 real runs")
	}
	const documented = 0 // docs/rules.md, "Leave-one-out on real runs"
	groups := append(fixtures.HistoryCleanGroups(t), fixtures.Baselines(t))
	alarms, n := 0, 0
	for _, g := range groups {
		in, err := figures.ReadFiles(g, figures.LoadOptions(0, ""))
		if err != nil {
			t.Fatal(err)
		}
		for i := range g {
			others := append(append([]figures.Run{}, in[:i]...), in[i+1:]...)
			env, err := envelope.Compute(others, envelope.Options{Name: "loo"})
			if err != nil {
				t.Fatal(err)
			}
			r, err := File(context.Background(), env, rulesFor(t, env), g[i], Options{})
			if err != nil {
				t.Fatal(err)
			}
			n++
			if len(r.Alerts) > 0 {
				alarms++
				t.Logf("%s against %d others: %v", filepath.Base(g[i]), len(others), names(r))
			}
		}
	}
	t.Logf("%d of %d real clean runs fired an alert against the rules of the others' envelope", alarms, n)
	if alarms > documented {
		t.Errorf("%d of %d real clean runs fired an alert, %d documented", alarms, n, documented)
	}
}
