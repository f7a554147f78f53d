package otlp

// OTLP/HTTP transport: where a request enters (checks, body within the
// budget, gzip) and how it is answered (partial_success).

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ServeHTTP implements OTLP/HTTP: POST, Content-Type application/x-protobuf
// or application/json, optional gzip Content-Encoding. 413 beyond the
// body limit, 415 for another content type, 400 for an undecodable body,
// 503 with Retry-After when MaxInFlight requests are already decoding.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		rc.fail(w, http.StatusMethodNotAllowed, OutcomeMethod, fmt.Errorf("method %s: OTLP/HTTP takes POST", r.Method))
		return
	}
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	isJSON := ct == "application/json"
	if err != nil || (!isJSON && ct != "application/x-protobuf" && ct != "application/protobuf") {
		rc.fail(w, http.StatusUnsupportedMediaType, OutcomeUnsupportedMedia,
			fmt.Errorf("content type %q: want application/x-protobuf or application/json", r.Header.Get("Content-Type")))
		return
	}
	// The body is received before a decoding slot is taken: a slow
	// client holds only the bytes it sent (MaxWireBytes), never a slot.
	raw, held, status, err := rc.receive(w, r)
	defer rc.wire.Add(-held)
	if err != nil {
		outcome := OutcomeBadRequest
		switch status {
		case http.StatusRequestEntityTooLarge:
			outcome = OutcomeTooLarge
		case http.StatusServiceUnavailable:
			outcome = OutcomeBusy
			w.Header().Set("Retry-After", RetryAfter)
		}
		rc.fail(w, status, outcome, err)
		return
	}
	if !rc.acquire(r.Context()) {
		w.Header().Set("Retry-After", RetryAfter)
		rc.fail(w, http.StatusServiceUnavailable, OutcomeBusy, fmt.Errorf("%d OTLP requests already being decoded; retry later", cap(rc.slots)))
		return
	}
	defer rc.release()
	body, status, err := rc.decompress(raw, r.Header.Get("Content-Encoding"))
	if err != nil {
		outcome := OutcomeBadRequest
		if status == http.StatusRequestEntityTooLarge {
			outcome = OutcomeTooLarge
		}
		rc.fail(w, status, outcome, err)
		return
	}
	// MetricsData is ExportMetricsServiceRequest's twin: the same one
	// field (resource_metrics = 1), so the same bytes and JSON decode.
	req := &metricpb.MetricsData{}
	if isJSON {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, req)
	} else {
		err = proto.Unmarshal(body, req)
	}
	if err != nil {
		rc.fail(w, http.StatusBadRequest, OutcomeBadRequest, fmt.Errorf("decoding OTLP %s body: %w", ct, err))
		return
	}
	rejected, msg := rc.export(req.GetResourceMetrics())
	var out []byte
	if isJSON {
		out = exportResponseJSON(rejected, msg)
		w.Header().Set("Content-Type", "application/json")
	} else {
		out = exportResponse(rejected, msg)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}
	w.WriteHeader(http.StatusOK)
	// The data is ingested and the status sent; a client gone before the
	// body arrives has nothing left to learn from an error here.
	_, _ = w.Write(out)
}

// receive reads an OTLP/HTTP body as sent (compressed or not), up to
// MaxBody bytes, charging each chunk to the wire budget as it arrives.
// held is what it charged, to be given back when the request is done.
func (rc *Receiver) receive(w http.ResponseWriter, r *http.Request) (raw []byte, held int64, status int, err error) {
	if r.ContentLength > rc.opts.MaxBody {
		return nil, 0, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes exceeds the %d-byte limit", r.ContentLength, rc.opts.MaxBody)
	}
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity", "gzip":
	default:
		return nil, 0, http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q: want gzip or none", r.Header.Get("Content-Encoding"))
	}
	return rc.readBody(w, r, rc.opts.MaxBody)
}

// readBody reads r's body up to limit bytes, charging RequestCost and
// then each chunk to the wire budget as it arrives; held is what it
// charged. The status says why it failed: 413 past limit, 503 past the
// wire budget, 400 a broken read.
func (rc *Receiver) readBody(w http.ResponseWriter, r *http.Request, limit int64) (raw []byte, held int64, status int, err error) {
	if !rc.chargeWire(RequestCost) {
		return nil, 0, http.StatusServiceUnavailable, fmt.Errorf("%d bytes of OTLP requests already being received; retry later", rc.opts.MaxWireBytes)
	}
	held = RequestCost
	src := http.MaxBytesReader(w, r.Body, limit)
	var buf bytes.Buffer
	// The read buffer starts small, so a stalled request holds little,
	// and grows while reads fill it.
	chunk := make([]byte, 4<<10)
	for {
		n, rerr := src.Read(chunk)
		if n > 0 {
			if !rc.chargeWire(int64(n)) {
				return nil, held, http.StatusServiceUnavailable, fmt.Errorf("%d bytes of OTLP requests already being received; retry later", rc.opts.MaxWireBytes)
			}
			held += int64(n)
			buf.Write(chunk[:n])
			if n == len(chunk) && len(chunk) < 32<<10 {
				chunk = make([]byte, 2*len(chunk))
			}
		}
		var mbe *http.MaxBytesError
		switch {
		case rerr == io.EOF:
			return buf.Bytes(), held, 0, nil
		case errors.As(rerr, &mbe):
			return nil, held, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the %d-byte limit", limit)
		case rerr != nil:
			return nil, held, http.StatusBadRequest, fmt.Errorf("reading body: %w", rerr)
		}
	}
}

// decompress undoes the body's content encoding. The body limit also
// bounds the decoded size (a gzip bomb).
func (rc *Receiver) decompress(raw []byte, encoding string) ([]byte, int, error) {
	if !strings.EqualFold(encoding, "gzip") {
		return raw, 0, nil
	}
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
	}
	defer gz.Close() //nolint:errcheck // only read; ReadAll reports a corrupt stream
	// gzip's trailer gives the decoded size (mod 2^32): reading into a
	// buffer of that size, when it is within the limit, spares the
	// doublings of a growing one, up to twice the body held at once. A
	// wrong size only costs the growth again.
	var buf bytes.Buffer
	if n := len(raw); n >= 4 {
		if size := int64(binary.LittleEndian.Uint32(raw[n-4:])); size <= rc.opts.MaxBody {
			buf.Grow(int(size) + bytes.MinRead)
		}
	}
	_, err = buf.ReadFrom(io.LimitReader(gz, rc.opts.MaxBody+1))
	body := buf.Bytes()
	switch {
	case int64(len(body)) > rc.opts.MaxBody:
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the %d-byte limit", rc.opts.MaxBody)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
	}
	return body, 0, nil
}

func (rc *Receiver) fail(w http.ResponseWriter, status int, outcome string, err error) {
	rc.opts.OnRequest(outcome, 0, err)
	http.Error(w, err.Error(), status)
}

// export consumes one export request's resource metrics and reports its
// outcome; it returns what the reply's partial_success carries.
func (rc *Receiver) export(rms []*metricpb.ResourceMetrics) (rejected int, msg string) {
	taken, rejected, msg := rc.Consume(rms)
	outcome := OutcomeOK
	if rejected > 0 {
		outcome = OutcomePartial
	}
	rc.opts.OnRequest(outcome, taken, nil)
	return rejected, msg
}

// exportResponse is the protobuf ExportMetricsServiceResponse: empty
// when every point was taken, else partial_success (1) holding
// rejected_data_points (1) and error_message (2).
func exportResponse(rejected int, msg string) []byte {
	if rejected == 0 {
		return nil
	}
	ps := protowire.AppendTag(nil, 1, protowire.VarintType)
	ps = protowire.AppendVarint(ps, uint64(rejected))
	if msg != "" {
		ps = protowire.AppendTag(ps, 2, protowire.BytesType)
		ps = protowire.AppendString(ps, msg)
	}
	out := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(out, ps)
}

// exportResponseJSON is the same response in OTLP/JSON (protojson's
// names; int64 as a string).
func exportResponseJSON(rejected int, msg string) []byte {
	type partial struct {
		Rejected int64  `json:"rejectedDataPoints,string"`
		Message  string `json:"errorMessage,omitempty"`
	}
	var resp struct {
		Partial *partial `json:"partialSuccess,omitempty"`
	}
	if rejected > 0 {
		resp.Partial = &partial{Rejected: int64(rejected), Message: msg}
	}
	out, _ := json.Marshal(resp) // a struct of strings and numbers cannot fail
	return out
}
