package k6

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/envelope-dev/envelope/internal/fixtures"
)

func TestParseNDJSONLine(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 8, 51, 4, 34267023, time.UTC)
	cases := []struct {
		name  string
		line  string
		point *Point
		def   *MetricDef
		err   string // substring; "" = no error
	}{
		{"point, k6 key order",
			`{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-30T08:51:04.034267023Z","value":1,"tags":{"name":"home","status":"200"}}}`,
			&Point{Metric: "http_reqs", Time: t0, Value: 1, Tags: map[string]string{"name": "home", "status": "200"}}, nil, ""},
		{"point, other key order, spaces, metadata, offset",
			` { "data" : { "metadata":{"vu":"1","iter":"0"}, "value" : -2.5e-3, "tags" : null, "time":"2026-11-30T10:51:04.034267023+02:00" } , "type":"Point", "metric":"m" } `,
			&Point{Metric: "m", Time: t0, Value: -0.0025, Tags: map[string]string{}, Metadata: map[string]string{"vu": "1", "iter": "0"}}, nil, ""},
		{"escaped strings",
			`{"metric":"a\"b","type":"Point","data":{"time":"2026-11-30T08:51:04.034267023Z","value":0,"tags":{"url":"http:\/\/x\/?q=\u00e9"}}}`,
			&Point{Metric: `a"b`, Time: t0, Tags: map[string]string{"url": "http://x/?q=é"}}, nil, ""},
		{"metric line with submetrics and abortOnFail threshold",
			`{"type":"Metric","data":{"name":"http_req_duration","type":"trend","contains":"time","thresholds":["p(95)<500",{"threshold":"max<1000","abortOnFail":true,"delayAbortEval":null}],"submetrics":[{"name":"http_req_duration{name:home}","suffix":"name:home","tags":{"name":"home"}}]},"metric":"http_req_duration"}`,
			nil, &MetricDef{Name: "http_req_duration", Type: Trend, Contains: Time, Thresholds: []string{"p(95)<500", "max<1000"},
				Submetrics: []SubmetricDef{{Name: "http_req_duration{name:home}", Suffix: "name:home", Tags: map[string]string{"name": "home"}}}}, ""},
		{"truncated", `{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-30T08:51:04Z","val`, nil, nil, "truncated"},
		{"NaN", `{"metric":"m","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":NaN,"tags":{}}}`, nil, nil, `"data.value"`},
		{"Inf as string", `{"metric":"m","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":"+Inf","tags":{}}}`, nil, nil, `"data.value"`},
		{"overflow", `{"metric":"m","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1e999,"tags":{}}}`, nil, nil, `"data.value"`},
		{"bad time", `{"metric":"m","type":"Point","data":{"time":"yesterday","value":1,"tags":{}}}`, nil, nil, `"data.time"`},
		{"day 31 of November", `{"metric":"m","type":"Point","data":{"time":"2026-11-31T08:51:04Z","value":1,"tags":{}}}`, nil, nil, `"data.time"`},
		{"tags not strings", `{"metric":"m","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{"a":1}}}`, nil, nil, `"data.tags.a"`},
		// Tag value errors name the tag, though the name is built only on error.
		{"tag value truncated", `{"metric":"m","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{"a":"x","b":"unterminat`, nil, nil, `"data.tags"`},
		{"tag value bad escape", `{"metric":"m","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1,"tags":{"a":"x","b":"\q"}}}`, nil, nil, `"data.tags.b"`},
		{"unknown line type", `{"metric":"m","type":"Sample","data":{}}`, nil, nil, `"type"`},
		{"unknown metric type", `{"type":"Metric","data":{"name":"x","type":"histogram","contains":"default"},"metric":"x"}`, nil, nil, `"data.type"`},
		{"no value", `{"metric":"m","type":"Point","data":{"time":"2026-11-30T08:51:04Z","tags":{}}}`, nil, nil, `"data.value"`},
		{"no metric", `{"type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1}}`, nil, nil, `"metric"`},
		{"trailing garbage", `{"metric":"m","type":"Point","data":{"time":"2026-11-30T08:51:04Z","value":1}} x`, nil, nil, "after"},
		{"not an object", `[1,2]`, nil, nil, "want '{'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p Point
			isPoint, def, err := ParseNDJSONLine([]byte(c.line), &p)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if isPoint != (c.point != nil) {
				t.Fatalf("isPoint %t", isPoint)
			}
			if c.point != nil {
				if p.Metric != c.point.Metric || !p.Time.Equal(c.point.Time) || p.Value != c.point.Value ||
					!maps.Equal(p.Tags, c.point.Tags) || !maps.Equal(p.Metadata, c.point.Metadata) {
					t.Errorf("got %+v, want %+v", p, *c.point)
				}
				return
			}
			if def.Name != c.def.Name || def.Type != c.def.Type || def.Contains != c.def.Contains ||
				strings.Join(def.Thresholds, "|") != strings.Join(c.def.Thresholds, "|") || len(def.Submetrics) != len(c.def.Submetrics) {
				t.Fatalf("got %+v, want %+v", def, c.def)
			}
			for i, s := range def.Submetrics {
				w := c.def.Submetrics[i]
				if s.Name != w.Name || s.Suffix != w.Suffix || !maps.Equal(s.Tags, w.Tags) {
					t.Errorf("submetric %+v, want %+v", s, w)
				}
			}
		})
	}
}

// A live stream reuses one Point: repeated tag sets cost no allocation,
// and a previous line's tags never leak into the next.
func TestParseNDJSONLineReuse(t *testing.T) {
	a := []byte(`{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-30T08:51:04.034267023Z","value":1.5,"tags":{"name":"home","status":"200"}}}`)
	b := []byte(`{"metric":"vus","type":"Point","data":{"time":"2026-11-30T08:51:05Z","value":3,"tags":{}}}`)
	var p Point
	if _, _, err := ParseNDJSONLine(a, &p); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _, _ = ParseNDJSONLine(a, &p) }); allocs != 0 {
		t.Errorf("%v allocations per repeated line, want 0", allocs)
	}
	if _, _, err := ParseNDJSONLine(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.Metric != "vus" || len(p.Tags) != 0 || p.Value != 3 {
		t.Errorf("after reuse: %+v", p)
	}
}

// Every line of the fixtures parses, and the scanner agrees with the
// generic path on values and times.
func TestParseNDJSONFixtureLines(t *testing.T) {
	r := mustLoad(t, fixtures.Path(t, "k6/generated-v2.2.0/runA-default/runA-out.ndjson"), LoadOptions{KeepPoints: true})
	if len(r.Points) != 1966 {
		t.Fatalf("%d points, want 1966", len(r.Points))
	}
	first := r.Points[0]
	if first.Metric != "http_reqs" || first.Value != 1 || first.Tags["name"] != "home" || first.Time.UnixNano() != 1796028664034267023 {
		t.Errorf("first point %+v", first)
	}
	b := mustLoad(t, fixtures.Path(t, "k6/generated-v2.2.0/runB-trendstats-vu-iter/runB-out.ndjson.gz"), LoadOptions{KeepPoints: true})
	withMeta := 0
	for _, p := range b.Points {
		if p.Metadata["vu"] != "" {
			withMeta++
		}
	}
	if withMeta == 0 {
		t.Error("runB points carry vu/iter metadata, none found")
	}
}
