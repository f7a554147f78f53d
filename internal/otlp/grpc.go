package otlp

import (
	"context"
	"fmt"
	"sync"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzip-compressed requests
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// Connection hygiene of the gRPC receiver: a client that does not finish
// its handshake within ConnectionTimeout is dropped, idle connections are
// closed, and dead peers are detected by keepalive pings.
const (
	GRPCConnectionTimeout = 10 * time.Second
	GRPCMaxConnectionIdle = 5 * time.Minute
	GRPCKeepaliveTime     = 1 * time.Minute
	GRPCKeepaliveTimeout  = 20 * time.Second
)

// GRPCServer returns a gRPC server with the OTLP metrics service (k6's
// default protocol, usually on port 4317), feeding the same Receiver as
// the HTTP handler. Messages over the body limit are refused by gRPC with
// RESOURCE_EXHAUSTED; calls past MaxInFlight with UNAVAILABLE (which OTLP
// exporters retry); calls failing GRPCAuth with UNAUTHENTICATED, before
// their message is read. extra adds options (grpc.Creds for TLS);
// without them it serves plaintext (K6_OTEL_GRPC_EXPORTER_INSECURE=true).
func (rc *Receiver) GRPCServer(extra ...grpc.ServerOption) *grpc.Server {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(rc.opts.MaxBody)),
		grpc.ConnectionTimeout(GRPCConnectionTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: GRPCMaxConnectionIdle,
			Time:              GRPCKeepaliveTime,
			Timeout:           GRPCKeepaliveTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.InTapHandle(rc.tap),
	}
	s := grpc.NewServer(append(opts, extra...)...)
	colmetricpb.RegisterMetricsServiceServer(s, &grpcService{rc: rc})
	return s
}

// tap runs before a call's message is read: authentication, then a
// decoding slot held until the stream ends.
func (rc *Receiver) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if rc.opts.GRPCAuth != nil {
		auth := ""
		if v := info.Header.Get("authorization"); len(v) > 0 {
			auth = v[0]
		}
		if !rc.opts.GRPCAuth(auth) {
			rc.opts.OnRequest(OutcomeUnauthorized, 0, fmt.Errorf("gRPC call %s without valid credentials", info.FullMethodName))
			return nil, status.Error(codes.Unauthenticated, "valid basic auth credentials required")
		}
	}
	if rc.slots == nil {
		return ctx, nil
	}
	select {
	case rc.slots <- struct{}{}:
	default:
		// The tap runs on the connection's reader: never wait here.
		err := fmt.Errorf("%d OTLP requests already being decoded; retry later", cap(rc.slots))
		rc.opts.OnRequest(OutcomeBusy, 0, err)
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	// The stream's context ends when the call does, whatever happened to
	// its message.
	var once sync.Once
	context.AfterFunc(ctx, func() { once.Do(rc.release) })
	return ctx, nil
}

type grpcService struct {
	colmetricpb.UnimplementedMetricsServiceServer
	rc *Receiver
}

func (g *grpcService) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	taken, rejected, msg := g.rc.Consume(req)
	resp := &colmetricpb.ExportMetricsServiceResponse{}
	outcome := OutcomeOK
	if rejected > 0 {
		outcome = OutcomePartial
		resp.PartialSuccess = &colmetricpb.ExportMetricsPartialSuccess{RejectedDataPoints: int64(rejected), ErrorMessage: msg}
	}
	g.rc.opts.OnRequest(outcome, taken, nil)
	return resp, nil
}
