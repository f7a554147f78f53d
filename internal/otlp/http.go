package otlp

// OTLP/HTTP transport: where a request enters (checks, body within the
// budget, gzip) and how it is answered (partial_success).

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
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
	rec, held, status, err := rc.receive(w, r)
	defer rc.wire.Add(-held)
	if err != nil {
		outcome := OutcomeBadRequest
		switch status {
		case http.StatusRequestEntityTooLarge:
			outcome = OutcomeTooLarge
		case http.StatusRequestTimeout:
			outcome = OutcomeTimeout
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
	body, status, err := rc.decompress(rec, 0, r.Header.Get("Content-Encoding"))
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
// MaxBody bytes, charging the chunks it is read into to the wire budget.
// held is what it charged, to be given back when the request is done.
func (rc *Receiver) receive(w http.ResponseWriter, r *http.Request) (rec *received, held int64, status int, err error) {
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity", "gzip":
	default:
		return nil, 0, http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q: want gzip or none", r.Header.Get("Content-Encoding"))
	}
	return rc.readBody(w, r, rc.opts.MaxBody)
}

// readBody reads r's body up to limit bytes, charging RequestCost and
// then each chunk it reads into to the wire budget; held is what it
// charged. The status says why it failed: 413 past limit, 503 past the
// wire budget, 400 a broken read.
//
// What is reserved is what is charged. A declared size (Content-Length,
// or a gRPC message's length prefix) reserves nothing: a client can
// declare the limit and send nothing, and a thousand such requests would
// pass any address-space limit before a byte arrived. A Content-Length
// past limit is refused at once. The body is read into chunks, each
// allocated and charged when the one before is full, so a request holds
// the bytes it sent and at most one chunk being filled. No buffer is
// grown by doubling, which would hold up to three times its bytes.
func (rc *Receiver) readBody(w http.ResponseWriter, r *http.Request, limit int64) (rec *received, held int64, status int, err error) {
	if r.ContentLength > limit {
		return nil, 0, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes exceeds the %d-byte limit", r.ContentLength, limit)
	}
	if !rc.chargeWire(RequestCost) {
		return nil, 0, http.StatusServiceUnavailable, rc.wireFull()
	}
	held = RequestCost
	b := &bodyReader{rc: rc, src: http.MaxBytesReader(w, r.Body, limit), held: &held}
	return b.chunks()
}

// received is a body as it arrived, in chunks. Joining chunks into one
// buffer waits for a decoding slot, whose share of the memory budget
// covers the joined copy (it is the body's decoded form when it was not
// compressed), so what is held while waiting is only what is charged.
type received struct {
	parts [][]byte
	n     int
}

// head returns up to the first k bytes.
func (rb *received) head(k int) []byte {
	out := make([]byte, 0, k)
	for _, p := range rb.parts {
		if len(out) == k {
			break
		}
		out = append(out, p[:min(len(p), k-len(out))]...)
	}
	return out
}

// from returns the bytes from offset off as one slice, joining chunks
// when there are several.
func (rb *received) from(off int) []byte {
	if len(rb.parts) == 1 {
		return rb.parts[0][off:]
	}
	out := make([]byte, 0, rb.n-off)
	for _, p := range rb.parts {
		if off >= len(p) {
			off -= len(p)
			continue
		}
		out = append(out, p[off:]...)
		off = 0
	}
	return out
}

// reader reads the bytes from offset off without joining them.
func (rb *received) reader(off int) io.Reader {
	rs := make([]io.Reader, 0, len(rb.parts))
	for _, p := range rb.parts {
		if off >= len(p) {
			off -= len(p)
			continue
		}
		rs = append(rs, bytes.NewReader(p[off:]))
		off = 0
	}
	return io.MultiReader(rs...)
}

func (rc *Receiver) wireFull() error {
	return fmt.Errorf("%d bytes of OTLP requests already being received; retry later", rc.opts.MaxWireBytes)
}

// bodyReader reads a body while charging its bytes to the wire budget.
type bodyReader struct {
	rc   *Receiver
	src  io.Reader
	held *int64
}

// Chunk sizes: the first is chunkMin bytes, so a stalled request holds
// little; each next one twice the last, up to chunkMax.
const (
	chunkMin = 4 << 10
	chunkMax = 32 << 10
)

// nextChunk is the size of the chunk after one of size prev (0: none).
func nextChunk(prev int) int { return min(max(2*prev, chunkMin), chunkMax) }

// Held is what a request being received holds, and has charged to the
// wire budget, once n bytes of its body have arrived and more are
// awaited: RequestCost and the chunks, the one being filled included.
func Held(n int64) int64 {
	total, size := int64(0), 0
	for total <= n {
		size = nextChunk(size)
		total += int64(size)
	}
	return RequestCost + total
}

// chunks reads a body into chunks, each charged to the wire budget when
// it is allocated, before its bytes arrive.
func (b *bodyReader) chunks() (*received, int64, int, error) {
	rb := &received{}
	var chunk []byte
	for {
		if len(chunk) == cap(chunk) {
			if len(chunk) > 0 {
				rb.parts = append(rb.parts, chunk)
			}
			size := nextChunk(cap(chunk))
			if !b.rc.chargeWire(int64(size)) {
				return nil, *b.held, http.StatusServiceUnavailable, b.rc.wireFull()
			}
			*b.held += int64(size)
			chunk = make([]byte, 0, size)
		}
		n, err := b.src.Read(chunk[len(chunk):cap(chunk)])
		chunk = chunk[:len(chunk)+n]
		rb.n += n
		switch {
		case err == io.EOF:
			if len(chunk) > 0 || len(rb.parts) == 0 {
				rb.parts = append(rb.parts, chunk)
			}
			return rb, *b.held, 0, nil
		case err != nil:
			status, err := readStatus(err)
			return nil, *b.held, status, err
		}
	}
}

// readStatus is the status of a failed body read: 413 past the limit,
// 408 past the server's read timeout, 400 otherwise.
func readStatus(err error) (int, error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the %d-byte limit", mbe.Limit)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return http.StatusRequestTimeout, fmt.Errorf("body not received within the read timeout: %w", err)
	}
	return http.StatusBadRequest, fmt.Errorf("reading body: %w", err)
}

// decompress undoes the body's content encoding. The body limit also
// bounds the decoded size (a gzip bomb). The stream is decoded twice:
// once to count its size, stopping past the limit, then into one buffer
// of exactly that size. Nothing is allocated for a bomb, and a forged
// size in the gzip trailer changes nothing.
func (rc *Receiver) decompress(rec *received, off int, encoding string) ([]byte, int, error) {
	if !strings.EqualFold(encoding, "gzip") {
		return rec.from(off), 0, nil
	}
	gz, err := gzip.NewReader(rec.reader(off))
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(gz, rc.opts.MaxBody+1))
	switch {
	case n > rc.opts.MaxBody:
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the %d-byte limit", rc.opts.MaxBody)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
	}
	if err := gz.Reset(rec.reader(off)); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(gz, body); err != nil {
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
