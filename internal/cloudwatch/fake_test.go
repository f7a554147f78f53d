package cloudwatch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/smithy-go/encoding/cbor"
)

// fakeCloudWatch speaks CloudWatch's GetMetricData wire protocol as the
// SDK (cloudwatch v1.75.7) uses it: Smithy RPC v2 CBOR, POST
// /service/GraniteServiceVersion20100801/operation/GetMetricData, CBOR
// bodies with timestamps as tag 1 epoch seconds, and AWS query-compatible
// errors (X-Amzn-Query-Error). It answers from a recorded response in
// the AWS CLI's JSON output shape.
type fakeCloudWatch struct {
	t        testing.TB
	recorded map[string]recordedResult
	pageSize int // > 0: paginate results with NextToken

	mu       sync.Mutex
	requests []fakeRequest
	// failures are served, in order, before normal answers.
	failures []fakeFailure
}

type recordedResult struct {
	ID         string      `json:"Id"`
	Label      string      `json:"Label"`
	StatusCode string      `json:"StatusCode"`
	Timestamps []time.Time `json:"Timestamps"`
	Values     []float64   `json:"Values"`
}

type fakeRequest struct {
	ids        []string
	start, end time.Time
	nextToken  string
	dims       map[string]string // of the first query
	period     uint64
}

type fakeFailure struct {
	status    int
	queryCode string // X-Amzn-Query-Error code
	typ       string // __type
}

func newFakeCloudWatch(t testing.TB, recordedPath string) (*fakeCloudWatch, *httptest.Server) {
	t.Helper()
	b, err := os.ReadFile(recordedPath)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		MetricDataResults []recordedResult
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("%s: %v", recordedPath, err)
	}
	f := &fakeCloudWatch{t: t, recorded: map[string]recordedResult{}}
	for _, r := range rec.MetricDataResults {
		f.recorded[r.ID] = r
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeCloudWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/service/GraniteServiceVersion20100801/operation/GetMetricData" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		return
	}
	if got := r.Header.Get("Smithy-Protocol"); got != "rpc-v2-cbor" {
		f.t.Errorf("Smithy-Protocol = %q", got)
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/") {
		f.t.Errorf("request not SigV4-signed with the static test key: %q", r.Header.Get("Authorization"))
	}
	body, _ := io.ReadAll(r.Body)
	req, err := parseRequest(body)
	if err != nil {
		f.t.Errorf("decoding request: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}

	f.mu.Lock()
	f.requests = append(f.requests, req)
	var fail *fakeFailure
	if len(f.failures) > 0 {
		fail = &f.failures[0]
		f.failures = f.failures[1:]
	}
	f.mu.Unlock()

	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	if fail != nil {
		w.Header().Set("X-Amzn-Query-Error", fail.queryCode+";Sender")
		w.WriteHeader(fail.status)
		_, _ = w.Write(cbor.Encode(cbor.Map{"__type": cbor.String(fail.typ), "message": cbor.String("recorded failure")})) // the client under test reports a short body
		return
	}
	if len(req.ids) > MaxQueriesPerCall {
		w.Header().Set("X-Amzn-Query-Error", "InvalidParameterValue;Sender")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(cbor.Encode(cbor.Map{"__type": cbor.String("InvalidParameterValue"), "message": cbor.String("too many queries")})) // the client under test reports a short body
		return
	}

	ids := req.ids
	next := ""
	if f.pageSize > 0 {
		from := 0
		if req.nextToken != "" {
			if _, err := fmt.Sscanf(req.nextToken, "from-%d", &from); err != nil {
				f.t.Errorf("NextToken %q was not issued by the fake: %v", req.nextToken, err)
				w.WriteHeader(http.StatusBadRequest)
				return
			}
		}
		to := min(from+f.pageSize, len(ids))
		if to < len(ids) {
			next = fmt.Sprintf("from-%d", to)
		}
		ids = ids[from:to]
	}
	var results cbor.List
	for _, id := range ids {
		rec, ok := f.recorded[id]
		if !ok {
			rec = recordedResult{ID: id, StatusCode: "Complete"}
		}
		var ts, vs cbor.List
		for i, t := range rec.Timestamps {
			// Only points inside [start, end) come back, as in CloudWatch.
			if t.Before(req.start) || !t.Before(req.end) {
				continue
			}
			ts = append(ts, &cbor.Tag{ID: 1, Value: cbor.Uint(t.Unix())})
			vs = append(vs, cbor.Float64(rec.Values[i]))
		}
		results = append(results, cbor.Map{
			"Id": cbor.String(id), "Label": cbor.String(rec.Label), "StatusCode": cbor.String(rec.StatusCode),
			"Timestamps": ts, "Values": vs,
		})
	}
	out := cbor.Map{"MetricDataResults": results, "Messages": cbor.List{}}
	if next != "" {
		out["NextToken"] = cbor.String(next)
	}
	_, _ = w.Write(cbor.Encode(out)) // the client under test reports a short body
}

func parseRequest(body []byte) (fakeRequest, error) {
	var req fakeRequest
	v, err := cbor.Decode(body)
	if err != nil {
		return req, err
	}
	m, ok := v.(cbor.Map)
	if !ok {
		return req, fmt.Errorf("body is %T, want a map", v)
	}
	if req.start, err = cborTime(m["StartTime"]); err != nil {
		return req, fmt.Errorf("StartTime: %w", err)
	}
	if req.end, err = cborTime(m["EndTime"]); err != nil {
		return req, fmt.Errorf("EndTime: %w", err)
	}
	if s, ok := m["NextToken"].(cbor.String); ok {
		req.nextToken = string(s)
	}
	qs, _ := m["MetricDataQueries"].(cbor.List)
	for i, q := range qs {
		qm, _ := q.(cbor.Map)
		id, _ := qm["Id"].(cbor.String)
		req.ids = append(req.ids, string(id))
		if i == 0 {
			ms, _ := qm["MetricStat"].(cbor.Map)
			if p, ok := ms["Period"].(cbor.Uint); ok {
				req.period = uint64(p)
			}
			metric, _ := ms["Metric"].(cbor.Map)
			dims, _ := metric["Dimensions"].(cbor.List)
			req.dims = map[string]string{}
			for _, d := range dims {
				dm, _ := d.(cbor.Map)
				n, _ := dm["Name"].(cbor.String)
				val, _ := dm["Value"].(cbor.String)
				req.dims[string(n)] = string(val)
			}
		}
	}
	return req, nil
}

func cborTime(v cbor.Value) (time.Time, error) {
	tag, ok := v.(*cbor.Tag)
	if !ok || tag.ID != 1 {
		return time.Time{}, fmt.Errorf("want tag 1, got %#v", v)
	}
	switch x := tag.Value.(type) {
	case cbor.Uint:
		return time.Unix(int64(x), 0).UTC(), nil
	case cbor.Float64:
		return time.UnixMilli(int64(float64(x) * 1e3)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("unexpected timestamp %#v", tag.Value)
}

// testAPI is a real SDK client pointed at the fake with static
// credentials; no call can reach AWS.
func testAPI(url string, creds aws.CredentialsProvider) *cloudwatch.Client {
	if creds == nil {
		creds = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}, nil
		})
	}
	return cloudwatch.New(cloudwatch.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(url),
		Credentials:      creds,
		RetryMaxAttempts: 1,
	})
}
