package dashboards

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/envelope"
)

// An envelope's endpoint labels become the display names of the
// endpoint series on the Endpoints dashboard; without labels nothing
// changes.
func TestEndpointLabelsRenameSeries(t *testing.T) {
	p95 := envelope.Band{Min: 10, Max: 20}
	env := testEnvelope()
	env.Endpoints = map[string]envelope.Endpoint{
		"auth_login": {Metric: "auth_login", Label: "Auth login (Cognito)", P95: p95},
		"docs":       {Tag: "name", Value: "POST /documents", Label: "Document upload", P95: p95},
		"actor_get":  {Metric: "actor_get", P95: p95},
	}
	endpointsJSON := func(o Options) string {
		ds, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.UID == UIDEndpoints {
				b, err := d.JSON()
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
		}
		t.Fatal("no endpoints dashboard")
		return ""
	}
	got := endpointsJSON(Options{Envelope: env})
	for _, want := range []string{`"Auth login (Cognito)"`, `"Auth login (Cognito) band max"`, `"POST /documents"`, `"Document upload"`} {
		if !strings.Contains(got, want) {
			t.Errorf("endpoints dashboard lacks %s", want)
		}
	}
	if strings.Contains(got, `"actor_get"`) {
		t.Error("an endpoint without a label got an override")
	}
	env.Endpoints = map[string]envelope.Endpoint{"actor_get": {Metric: "actor_get", P95: p95}}
	bare := testEnvelope()
	bare.Endpoints = nil
	if a, b := endpointsJSON(Options{Envelope: env}), endpointsJSON(Options{Envelope: bare}); a != b {
		t.Error("an envelope without labels changed the dashboard")
	}
}
