package envelope

import (
	"slices"
	"testing"

	"github.com/envelope-dev/envelope/internal/k6"
)

// A --group-by value whose http_req_duration samples are exactly a
// custom trend's in every run is one endpoint, listed once (under the
// trend); a value whose samples differ in any run stays its own band.
func TestEndpointKeysDropGroupDuplicatingTrend(t *testing.T) {
	run := func(login, loginTrend []float64) Input {
		var pts []k6.Point
		for _, v := range login {
			pts = append(pts, k6.Point{Metric: "http_req_duration", Value: v, Tags: map[string]string{"name": "auth_login"}})
		}
		for _, v := range loginTrend {
			pts = append(pts, k6.Point{Metric: "auth_login", Value: v})
		}
		for _, v := range []float64{3, 1, 2} {
			pts = append(pts, k6.Point{Metric: "http_req_duration", Value: v, Tags: map[string]string{"name": "home"}})
		}
		return Input{Run: &k6.Run{GroupBy: "name", Points: pts,
			Metrics: map[string]*k6.Metric{"auth_login": {Name: "auth_login", Parent: "auth_login", Type: k6.Trend, Contains: k6.Time}},
			Groups: map[string]map[string]*k6.Metric{
				"auth_login": {"http_req_duration": {}},
				"home":       {"http_req_duration": {}},
			}}}
	}
	names := func(in []Input) []string {
		var out []string
		for _, k := range endpointKeys(in, "name") {
			out = append(out, k.name)
		}
		return out
	}
	tests := []struct {
		name string
		in   []Input
		want []string
	}{
		{"same samples in every run", []Input{run([]float64{300, 100}, []float64{100, 300}), run([]float64{5}, []float64{5})},
			[]string{"auth_login", "name=home"}},
		{"one run differs", []Input{run([]float64{300, 100}, []float64{100, 300}), run([]float64{5}, []float64{6})},
			[]string{"auth_login", "name=auth_login", "name=home"}},
		{"a subset is not the same", []Input{run([]float64{300, 100}, []float64{100})},
			[]string{"auth_login", "name=auth_login", "name=home"}},
	}
	for _, tt := range tests {
		if got := names(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("%s: endpoints %q, want %q", tt.name, got, tt.want)
		}
	}
}
