package otlp

import (
	"context"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzip-compressed requests
)

// GRPCServer returns a gRPC server with the OTLP metrics service (k6's
// default protocol, usually on port 4317), feeding the same Receiver as
// the HTTP handler. Messages over the body limit are refused by gRPC with
// RESOURCE_EXHAUSTED. It serves plaintext: set
// K6_OTEL_GRPC_EXPORTER_INSECURE=true in k6.
func (rc *Receiver) GRPCServer() *grpc.Server {
	s := grpc.NewServer(grpc.MaxRecvMsgSize(int(rc.opts.MaxBody)))
	colmetricpb.RegisterMetricsServiceServer(s, &grpcService{rc: rc})
	return s
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
