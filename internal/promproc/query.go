package promproc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Sample is one element of an instant-vector query result.
type Sample struct {
	Labels map[string]string
	Time   time.Time
	Value  float64
}

// Query runs an instant query against the Prometheus at base (its URL) at
// time at (zero = now) and returns the vector, or every point of a range
// vector (a matrix) with its own timestamp; a scalar result is one
// sample without labels. Histogram samples are reported with their count
// as Value.
func Query(ctx context.Context, base, expr string, at time.Time) ([]Sample, error) {
	q := url.Values{"query": {expr}}
	if !at.IsZero() {
		q.Set("time", strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64))
	}
	status, body, err := get(ctx, base+"/api/v1/query?"+q.Encode())
	if err != nil {
		return nil, err
	}
	var r struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("query %q: HTTP %d: %w", expr, status, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", expr, r.ErrorType, r.Error)
	}
	var out []Sample
	if r.Data.ResultType == "scalar" {
		var pair []any
		if err := json.Unmarshal(r.Data.Result, &pair); err != nil {
			return nil, fmt.Errorf("query %q: scalar: %w", expr, err)
		}
		s, err := point(pair, false)
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", expr, err)
		}
		return append(out, s), nil
	}
	if r.Data.ResultType != "vector" && r.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("query %q: result type %s, want vector, matrix or scalar", expr, r.Data.ResultType)
	}
	var result []struct {
		Metric     map[string]string `json:"metric"`
		Value      []any             `json:"value"`
		Histogram  []any             `json:"histogram"`
		Values     [][]any           `json:"values"`
		Histograms [][]any           `json:"histograms"`
	}
	if err := json.Unmarshal(r.Data.Result, &result); err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	for _, e := range result {
		var floats, hists [][]any
		if e.Value != nil {
			floats = append(floats, e.Value)
		}
		if e.Histogram != nil {
			hists = append(hists, e.Histogram)
		}
		floats = append(floats, e.Values...)
		hists = append(hists, e.Histograms...)
		for _, pair := range floats {
			s, err := point(pair, false)
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", expr, err)
			}
			s.Labels = e.Metric
			out = append(out, s)
		}
		for _, pair := range hists {
			s, err := point(pair, true)
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", expr, err)
			}
			s.Labels = e.Metric
			out = append(out, s)
		}
	}
	return out, nil
}

// point decodes one [timestamp, value] pair of the HTTP API.
func point(pair []any, histogram bool) (Sample, error) {
	if len(pair) != 2 {
		return Sample{}, fmt.Errorf("malformed sample %v", pair)
	}
	ts, ok := pair[0].(float64)
	if !ok {
		return Sample{}, fmt.Errorf("malformed timestamp %v", pair[0])
	}
	raw := pair[1]
	if histogram {
		h, _ := pair[1].(map[string]any)
		raw = h["count"]
	}
	str, _ := raw.(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return Sample{}, fmt.Errorf("value %v: %w", raw, err)
	}
	return Sample{Time: time.Unix(0, int64(math.Round(ts*1000))*int64(time.Millisecond)), Value: v}, nil
}

// Alert is one element of /api/v1/alerts: a pending or firing alert.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	// ActiveAt is when the alert's expression first held (pending).
	ActiveAt time.Time `json:"activeAt"`
}

// Alerts returns the pending and firing alerts of the Prometheus at base.
func Alerts(ctx context.Context, base string) ([]Alert, error) {
	status, body, err := get(ctx, base+"/api/v1/alerts")
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("alerts: HTTP %d: %w", status, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("alerts: %s", r.Error)
	}
	return r.Data.Alerts, nil
}

// get fetches target and returns the status and body (at most 32 MiB).
func get(ctx context.Context, target string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close() //nolint:errcheck // response body, only read
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	return resp.StatusCode, body, err
}
