package promproc

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Query decodes every result type the HTTP API returns for an instant
// query; the bodies are the shapes Prometheus 3 sends.
func TestQuery(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []float64
		wantErr bool
	}{
		{"vector", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"a"},"value":[1700000000.5,"2"]},{"metric":{"job":"b"},"value":[1700000000.5,"NaN"]}]}}`, []float64{2, -1}, false},
		{"matrix", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"a"},"values":[[1,"1"],[2,"3"]]}]}}`, []float64{1, 3}, false},
		{"scalar", `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"42"]}}`, []float64{42}, false},
		{"native histogram count", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{"count":"7","sum":"1.5"}]}]}}`, []float64{7}, false},
		{"empty", `{"status":"success","data":{"resultType":"vector","result":[]}}`, nil, false},
		{"bad expression", `{"status":"error","errorType":"bad_data","error":"parse error"}`, nil, true},
		{"string result", `{"status":"success","data":{"resultType":"string","result":[1,"x"]}}`, nil, true},
		{"not json", `<html>`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/query" || r.URL.Query().Get("query") != "up" {
					t.Errorf("request %s", r.URL)
				}
				_, _ = w.Write([]byte(tt.body)) // the client under test reports a short body
			}))
			defer srv.Close()
			got, err := Query(context.Background(), srv.URL, "up", time.Time{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d samples %v, want %d", len(got), got, len(tt.want))
			}
			for i, s := range got {
				// -1 stands for NaN in the table.
				if tt.want[i] == -1 {
					if !math.IsNaN(s.Value) {
						t.Errorf("sample %d = %v, want NaN", i, s.Value)
					}
					continue
				}
				if s.Value != tt.want[i] {
					t.Errorf("sample %d = %v, want %v", i, s.Value, tt.want[i])
				}
			}
		})
	}
}

func TestAlerts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/alerts" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"alerts":[{"labels":{"alertname":"X","testid":"e2e"},"annotations":{"summary":"s"},"state":"firing"}]}}`)) // the client under test reports a short body
	}))
	defer srv.Close()
	got, err := Alerts(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Labels["alertname"] != "X" || got[0].State != "firing" || got[0].Annotations["summary"] != "s" {
		t.Errorf("alerts = %+v", got)
	}
	if _, err := Alerts(context.Background(), srv.URL+"/nowhere"); err == nil {
		t.Error("a 404 page decoded as alerts")
	}
}
