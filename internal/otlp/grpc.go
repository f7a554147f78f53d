package otlp

import (
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// OTLP/gRPC is one unary call, MetricsService/Export, which is small
// enough to serve with net/http's HTTP/2 server rather than a gRPC
// library: the gRPC framework, its generated service code and their
// dependencies would be most of the exporter's start-up cost
// (docs/builds.md). The wire format is gRPC over HTTP/2 as its protocol
// specification describes it: a POST to /Service/Method with content
// type application/grpc, a body of length-prefixed messages, the status
// in the grpc-status and grpc-message trailers.

// exportPath is the one method served.
const exportPath = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"

// Connection hygiene of the gRPC receiver: a client that does not finish
// its TLS handshake or HTTP/2 preface within ConnectionTimeout is
// dropped, idle connections are closed, and dead peers are detected by
// pings.
const (
	GRPCConnectionTimeout = 10 * time.Second
	GRPCMaxConnectionIdle = 5 * time.Minute
	GRPCKeepaliveTime     = 1 * time.Minute
	GRPCKeepaliveTimeout  = 20 * time.Second
	// GRPCReadTimeout bounds the reading of one call's message.
	GRPCReadTimeout = 30 * time.Second
)

// gRPC status codes (the grpc-status trailer).
const (
	codeOK                = 0
	codeInvalidArgument   = 3
	codeDeadlineExceeded  = 4
	codeResourceExhausted = 8
	codeUnimplemented     = 12
	codeInternal          = 13
	codeUnavailable       = 14
	codeUnauthenticated   = 16
)

// GRPCServer returns an HTTP/2 server of the OTLP metrics service (k6's
// default protocol, usually on port 4317) feeding the same Receiver as
// the HTTP handler. With tc it serves TLS (call ServeTLS(l, "", "")),
// without it plaintext HTTP/2 with prior knowledge, which is what gRPC
// clients speak without TLS (K6_OTEL_GRPC_EXPORTER_INSECURE=true).
func (rc *Receiver) GRPCServer(tc *tls.Config) *http.Server {
	p := new(http.Protocols)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	if tc != nil {
		tc = tc.Clone()
		tc.NextProtos = []string{"h2"}
	}
	return &http.Server{
		Handler:           http.HandlerFunc(rc.serveGRPC),
		Protocols:         p,
		TLSConfig:         tc,
		ReadHeaderTimeout: GRPCConnectionTimeout,
		ReadTimeout:       GRPCReadTimeout,
		IdleTimeout:       GRPCMaxConnectionIdle,
		HTTP2:             &http.HTTP2Config{SendPingTimeout: GRPCKeepaliveTime, PingTimeout: GRPCKeepaliveTimeout},
	}
}

// serveGRPC answers one gRPC call. As over OTLP/HTTP, credentials are
// checked before the message is read, and the message is received
// (charged to the wire budget) before a decoding slot is taken, so a
// slow sender holds bytes, never a slot. Refusals map onto the codes
// OTLP exporters act on: UNAVAILABLE is retried, RESOURCE_EXHAUSTED,
// INVALID_ARGUMENT and UNAUTHENTICATED are not.
func (rc *Receiver) serveGRPC(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		rc.fail(w, http.StatusUnsupportedMediaType, OutcomeUnsupportedMedia,
			fmt.Errorf("content type %q: gRPC calls are application/grpc", r.Header.Get("Content-Type")))
		return
	}
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Grpc-Accept-Encoding", "gzip")
	if r.Method != http.MethodPost || r.URL.Path != exportPath {
		rc.grpcFail(w, codeUnimplemented, OutcomeMethod, fmt.Errorf("method %s %s: only %s is served", r.Method, r.URL.Path, exportPath))
		return
	}
	if rc.opts.GRPCAuth != nil && !rc.opts.GRPCAuth(r.Header.Get("Authorization")) {
		rc.grpcFail(w, codeUnauthenticated, OutcomeUnauthorized, fmt.Errorf("gRPC call %s without valid credentials", exportPath))
		return
	}
	rec, held, status, err := rc.readBody(w, r, rc.opts.MaxBody+5)
	defer rc.wire.Add(-held)
	switch status {
	case 0:
	case http.StatusRequestEntityTooLarge:
		rc.grpcFail(w, codeResourceExhausted, OutcomeTooLarge, fmt.Errorf("message larger than the %d-byte limit", rc.opts.MaxBody))
		return
	case http.StatusServiceUnavailable:
		rc.grpcFail(w, codeUnavailable, OutcomeBusy, err)
		return
	case http.StatusRequestTimeout:
		rc.grpcFail(w, codeDeadlineExceeded, OutcomeTimeout, err)
		return
	default:
		rc.grpcFail(w, codeInvalidArgument, OutcomeBadRequest, err)
		return
	}
	head := rec.head(5)
	code, err := grpcMessage(head, rec.n, r.Header.Get("Grpc-Encoding"))
	if err != nil {
		rc.grpcFail(w, code, OutcomeBadRequest, err)
		return
	}
	if !rc.acquire(r.Context()) {
		rc.grpcFail(w, codeUnavailable, OutcomeBusy, fmt.Errorf("%d OTLP requests already being decoded; retry later", cap(rc.slots)))
		return
	}
	defer rc.release()
	encoding := ""
	if compressed := head[0] == 1; compressed {
		encoding = "gzip"
	}
	msg, status, err := rc.decompress(rec, 5, encoding)
	if err != nil {
		if status == http.StatusRequestEntityTooLarge {
			rc.grpcFail(w, codeResourceExhausted, OutcomeTooLarge, fmt.Errorf("decompressed message larger than the %d-byte limit", rc.opts.MaxBody))
		} else {
			rc.grpcFail(w, codeInternal, OutcomeBadRequest, err)
		}
		return
	}
	// MetricsData has ExportMetricsServiceRequest's one field.
	req := &metricpb.MetricsData{}
	if err := proto.Unmarshal(msg, req); err != nil {
		rc.grpcFail(w, codeInvalidArgument, OutcomeBadRequest, fmt.Errorf("decoding the OTLP message: %w", err))
		return
	}
	rejected, text := rc.export(req.GetResourceMetrics())
	out := exportResponse(rejected, text)
	frame := make([]byte, 5, 5+len(out))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(out)))
	w.WriteHeader(http.StatusOK)
	// The data is ingested; a client gone before the reply has nothing
	// left to learn from an error here.
	_, _ = w.Write(append(frame, out...))
	w.Header().Set(http.TrailerPrefix+"Grpc-Status", strconv.Itoa(codeOK))
}

// grpcMessage checks a unary call's body, one length-prefixed message,
// from its first bytes (head) and its length, and returns the status code
// and error that refuse it, if any.
func grpcMessage(head []byte, total int, encoding string) (int, error) {
	if total < 5 {
		return codeInvalidArgument, fmt.Errorf("gRPC body of %d bytes holds no message", total)
	}
	n := binary.BigEndian.Uint32(head[1:5])
	switch {
	case uint64(total-5) < uint64(n):
		return codeInvalidArgument, fmt.Errorf("gRPC message of %d bytes is cut off after %d", n, total-5)
	case uint64(total-5) > uint64(n):
		return codeInvalidArgument, fmt.Errorf("more than one message in a unary gRPC call")
	}
	switch flag := head[0]; {
	case flag == 0:
	case flag != 1:
		return codeInvalidArgument, fmt.Errorf("gRPC message flag %d: want 0 or 1", flag)
	case encoding == "gzip":
	case encoding == "" || encoding == "identity":
		return codeInternal, fmt.Errorf("compressed gRPC message without a grpc-encoding")
	default:
		return codeUnimplemented, fmt.Errorf("grpc-encoding %q: only gzip is accepted", encoding)
	}
	return 0, nil
}

// grpcFail ends a call with a status and no message (a trailers-only
// response: the status travels in the headers).
func (rc *Receiver) grpcFail(w http.ResponseWriter, code int, outcome string, err error) {
	rc.opts.OnRequest(outcome, 0, err)
	if code == codeUnavailable {
		w.Header().Set("Retry-After", RetryAfter)
	}
	w.Header().Set("Grpc-Status", strconv.Itoa(code))
	w.Header().Set("Grpc-Message", grpcPercentEncode(err.Error()))
	w.WriteHeader(http.StatusOK)
}

// grpcPercentEncode encodes a status message as the grpc-message header
// carries it: bytes outside printable ASCII, and '%', as %XX.
func grpcPercentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
