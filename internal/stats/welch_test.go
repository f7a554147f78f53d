package stats

import (
	"math"
	"testing"
)

func TestWelchLog(t *testing.T) {
	e := math.Exp
	// Equal spread and size on the log scale make Welch's df exactly
	// 2(n-1) = 4, so the interval can be computed by hand.
	base := []float64{e(-0.1), 1, e(0.1)}
	cand := []float64{1.2 * e(-0.1), 1.2, 1.2 * e(0.1)}
	b, err := LogMomentsOf(base)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := LogMomentsOf(cand)
	r, err := WelchLog(b, c, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	se := math.Sqrt(2 * 0.01 / 3)
	for _, chk := range []struct {
		name      string
		got, want float64
	}{
		{"ratio", r.Ratio, 1.2},
		{"df", r.DF, 4},
		{"se", r.SE, se},
		{"low", r.Low, 1.2 * e(-2.776445*se)},
		{"high", r.High, 1.2 * e(2.776445*se)},
		{"mdc", r.MDC, e((2.776445+0.940965)*se) - 1},
	} {
		if math.Abs(chk.got-chk.want) > 1e-5*math.Max(1, math.Abs(chk.want)) {
			t.Errorf("%s = %v, want %v", chk.name, chk.got, chk.want)
		}
	}
	// A 20% rise: significant against no change (t = 2.23, df 4,
	// p = 0.045), clearly not above a 50% margin.
	if p := r.PAbove(0); math.Abs(p-0.0446) > 0.001 {
		t.Errorf("PAbove(0) = %v, want ~0.0446", p)
	}
	if p := r.PAbove(0.5); p < 0.5 {
		t.Errorf("PAbove(50%%) = %v, want > 0.5", p)
	}
	if p := r.PBelow(0); p < 0.95 {
		t.Errorf("PBelow(0) = %v, want > 0.95 for a rise", p)
	}
}

func TestWelchLogSingleCandidate(t *testing.T) {
	b, _ := LogMomentsOf([]float64{100, 102, 98, 101, 99})
	c, _ := LogMomentsOf([]float64{100})
	r, err := WelchLog(b, c, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	// One candidate run: baseline spread, df = n-1, SE = s·√(1/n+1).
	if r.DF != 4 {
		t.Errorf("df = %v, want 4", r.DF)
	}
	if want := b.SD * math.Sqrt(1.0/5+1); math.Abs(r.SE-want) > 1e-12 {
		t.Errorf("se = %v, want %v", r.SE, want)
	}
	if !(r.Low < 1 && r.High > 1) {
		t.Errorf("interval [%v, %v] should contain 1", r.Low, r.High)
	}
}

func TestWelchLogErrors(t *testing.T) {
	if _, err := LogMomentsOf([]float64{1, 0}); err == nil {
		t.Error("zero value accepted")
	}
	if _, err := LogMomentsOf(nil); err == nil {
		t.Error("empty slice accepted")
	}
	b, _ := LogMomentsOf([]float64{1})
	c, _ := LogMomentsOf([]float64{1, 2})
	if _, err := WelchLog(b, c, 0.95); err == nil {
		t.Error("one baseline run accepted")
	}
	if _, err := WelchLog(c, c, 1.5); err == nil {
		t.Error("confidence 1.5 accepted")
	}
}
