package stack

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
// vector (a matrix) with its own timestamp. Histogram samples are
// reported with their count as Value.
func Query(ctx context.Context, base, expr string, at time.Time) ([]Sample, error) {
	q := url.Values{"query": {expr}}
	if !at.IsZero() {
		q.Set("time", strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	var r struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric     map[string]string `json:"metric"`
				Value      []any             `json:"value"`
				Histogram  []any             `json:"histogram"`
				Values     [][]any           `json:"values"`
				Histograms [][]any           `json:"histograms"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("query %q: HTTP %d: %w", expr, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", expr, r.ErrorType, r.Error)
	}
	if r.Data.ResultType != "vector" && r.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("query %q: result type %s, want vector or matrix", expr, r.Data.ResultType)
	}
	var out []Sample
	for _, e := range r.Data.Result {
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
	var raw any = pair[1]
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
