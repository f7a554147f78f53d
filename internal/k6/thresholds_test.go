package k6

import "testing"

func TestThresholds(t *testing.T) {
	values := map[string]float64{"p(95)": 480, "rate": 0.01, "count": 5}
	cases := []struct {
		expr      string
		ok, known bool
		err       bool
	}{
		{"p(95)<500", true, true, false},
		{" p(95) >= 500 ", false, true, false},
		{"rate<0.01", false, true, false},
		{"rate<=0.01", true, true, false},
		{"count===5", true, true, false},
		{"count!=5", false, true, false},
		{"p(99)<1000", false, false, false}, // stat not computed
		{"p(101)<5", false, false, true},
		{"avg<", false, false, true},
		{"avg", false, false, true},
		{"avg<>3", false, false, true},
	}
	for _, c := range cases {
		th, err := parseThreshold(c.expr)
		if (err != nil) != c.err {
			t.Errorf("%q: err %v", c.expr, err)
			continue
		}
		if err != nil {
			continue
		}
		if ok, known := th.passed(values); ok != c.ok || known != c.known {
			t.Errorf("%q: passed %t known %t, want %t %t", c.expr, ok, known, c.ok, c.known)
		}
	}
}
